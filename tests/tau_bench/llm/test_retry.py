"""The LLM layer's one retry engine, and the same names in every transport's engine."""

from __future__ import annotations

import asyncio
import importlib

import httpx
import pytest

from tau_bench.llm.retry import RetryPolicy, call_with_retries

waits: list[float] = []


async def _no_sleep(seconds: float) -> None:
    waits.append(seconds)


POLICY = RetryPolicy(
    initial_wait=1.0, max_wait=4.0, jitter=0.0, max_retry_after=5.0, sleep=_no_sleep
)


class Flaky(Exception):
    pass


async def test_retries_what_is_retryable_with_backoff_or_the_asked_wait() -> None:
    waits.clear()
    failures = [Flaky("a"), Flaky("asked 99"), Flaky("c")]
    seen: list[tuple[int, str, float]] = []

    async def call() -> str:
        if failures:
            raise failures.pop(0)
        return "done"

    result = await call_with_retries(
        call,
        POLICY,
        attempts=5,
        retryable=lambda exc: isinstance(exc, Flaky),
        asked_wait=lambda exc: 99.0 if "asked" in str(exc) else None,
        on_retry=lambda attempt, exc, wait: seen.append((attempt, str(exc), wait)),
    )
    assert result == "done"
    assert seen == [(1, "a", 1.0), (2, "asked 99", 5.0), (3, "c", 4.0)]
    assert waits == [1.0, 5.0, 4.0]


async def test_gives_up_after_the_attempts_and_never_retries_the_rest() -> None:
    calls = 0

    async def always(exc: Exception) -> None:
        nonlocal calls
        calls += 1
        raise exc

    common = {"asked_wait": lambda exc: None, "on_retry": lambda *a: None}
    with pytest.raises(Flaky):
        await call_with_retries(
            lambda: always(Flaky()), POLICY, attempts=3, retryable=lambda e: True, **common
        )
    assert calls == 3
    calls = 0
    with pytest.raises(ValueError):
        await call_with_retries(
            lambda: always(ValueError()), POLICY, attempts=3, retryable=lambda e: False, **common
        )
    assert calls == 1
    calls = 0
    with pytest.raises(ValueError):  # attempts below one still make one
        await call_with_retries(
            lambda: always(ValueError()), POLICY, attempts=0, retryable=lambda e: True, **common
        )
    assert calls == 1


async def test_a_cancellation_is_never_retried() -> None:
    calls = 0

    async def cancelled() -> None:
        nonlocal calls
        calls += 1
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await call_with_retries(
            cancelled,
            POLICY,
            attempts=5,
            retryable=lambda exc: True,
            asked_wait=lambda exc: None,
            on_retry=lambda *a: None,
        )
    assert calls == 1


@pytest.mark.parametrize(
    "module", ["tau_bench.llm.retry", "adapters.dialogflow.retry", "adapters.http.transport"]
)
def test_every_transport_names_its_engine_the_same(module: str) -> None:
    loaded = importlib.import_module(module)
    assert isinstance(loaded.RetryPolicy, type) and callable(loaded.call_with_retries)


async def test_the_http_engine_retries_connection_errors_only_when_told() -> None:
    from adapters.http.transport import RetryPolicy as HttpRetryPolicy
    from adapters.http.transport import call_with_retries as http_call_with_retries

    calls = 0

    async def refused() -> None:
        nonlocal calls
        calls += 1
        raise httpx.ConnectError("refused")

    for connection_errors, expected in ((True, 3), (False, 1)):
        calls = 0
        policy = HttpRetryPolicy(
            max_attempts=3, backoff_initial=0.0, connection_errors=connection_errors
        )
        with pytest.raises(httpx.ConnectError):
            await http_call_with_retries(refused, policy, sleep=_no_sleep)
        assert calls == expected
