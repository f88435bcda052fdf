"""Retry rules (fake sleep: no waiting) and the token bucket (fake clock)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.protobuf import duration_pb2
from google.rpc import error_details_pb2

from adapters.dialogflow.retry import RetryLog, RetryPolicy, TokenBucket, call_with_retries
from tau_adapters.protocol import AdapterAuthError, AdapterError


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _retry_info(seconds: float) -> error_details_pb2.RetryInfo:
    whole = int(seconds)
    return error_details_pb2.RetryInfo(
        retry_delay=duration_pb2.Duration(seconds=whole, nanos=int((seconds - whole) * 1e9))
    )


class Flaky:
    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


async def _run(call: Flaky, policy: RetryPolicy | None = None) -> tuple[Any, RetryLog, FakeTime]:
    fake = FakeTime()
    log = RetryLog()
    result = await call_with_retries(
        call, policy or RetryPolicy(), log=log, sleep=fake.sleep, rng=random.Random(1)
    )
    return result, log, fake


async def test_retry_info_is_honoured() -> None:
    call = Flaky(gexc.ResourceExhausted("quota", details=[_retry_info(7.5)]))
    result, log, fake = await _run(call)
    assert result == "ok" and call.calls == 2
    [slept] = fake.slept  # the server's delay plus up to 20 % jitter, never less
    assert 7.5 <= slept <= 9.0
    assert log.retries == [{"code": "RESOURCE_EXHAUSTED", "delay": slept, "server_delay": True}]


async def test_server_delays_are_jittered_so_episodes_do_not_retry_in_lockstep() -> None:
    policy = RetryPolicy()
    rng = random.Random(7)
    delays = [policy.server_backoff(2.0, rng) for _ in range(20)]
    assert all(2.0 <= d <= 2.0 * (1 + policy.jitter) for d in delays)
    assert len({round(d, 6) for d in delays}) == 20


def test_the_default_budget_outlasts_a_per_minute_quota_window() -> None:
    policy = RetryPolicy()
    assert policy.max_attempts == 10
    assert policy.budget() > 60.0


async def test_quota_refusals_for_a_minute_are_survived_with_defaults() -> None:
    """RESOURCE_EXHAUSTED without RetryInfo until 70 s have passed (a per-minute quota
    window, and some): the default policy is still retrying when the window reopens."""
    fake = FakeTime()
    calls = 0

    async def call() -> str:
        nonlocal calls
        calls += 1
        if sum(fake.slept) < 70.0:
            raise gexc.ResourceExhausted("quota")
        return "ok"

    result = await call_with_retries(call, RetryPolicy(), sleep=fake.sleep, rng=random.Random(3))
    assert result == "ok" and calls <= 10


async def test_unavailable_backs_off_exponentially_with_jitter() -> None:
    call = Flaky(*[gexc.ServiceUnavailable("down") for _ in range(4)])
    policy = RetryPolicy(initial=1.0, multiplier=2.0, maximum=5.0, jitter=0.2)
    _, _, fake = await _run(call, policy)
    assert call.calls == 5
    for slept, base in zip(fake.slept, [1.0, 2.0, 4.0, 5.0], strict=True):
        assert base * 0.8 <= slept <= base * 1.2


async def test_gives_up_after_max_attempts_with_a_retryable_error() -> None:
    call = Flaky(*[gexc.ServiceUnavailable("down") for _ in range(10)])
    with pytest.raises(AdapterError) as info:
        await _run(call, RetryPolicy(max_attempts=3))
    assert call.calls == 3
    assert info.value.retryable and "UNAVAILABLE: down" in str(info.value)


@pytest.mark.parametrize("error", [gexc.DeadlineExceeded("slow"), gexc.InternalServerError("oops")])
async def test_ambiguous_errors_are_retried_once_and_recorded(error: Exception) -> None:
    call = Flaky(error)
    _, log, fake = await _run(call)
    assert call.calls == 2 and fake.slept == []
    assert log.ambiguous == 1
    twice = Flaky(error, error)
    with pytest.raises(AdapterError):
        await _run(twice)
    assert twice.calls == 2


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (gexc.Unauthenticated("who?"), AdapterAuthError),
        (gexc.PermissionDenied("no"), AdapterAuthError),
        (gexc.InvalidArgument("text too long"), AdapterError),
        (gexc.NotFound("no agent"), AdapterError),
        (gexc.FailedPrecondition("nope"), AdapterError),
    ],
)
async def test_no_retry_for_client_errors(error: Exception, kind: type[AdapterError]) -> None:
    call = Flaky(error)
    with pytest.raises(kind) as info:
        await _run(call)
    assert call.calls == 1
    assert not info.value.retryable
    assert error.message in str(info.value)  # type: ignore[attr-defined]


async def test_token_bucket_spaces_requests() -> None:
    fake = FakeTime()
    bucket = TokenBucket(2.0, burst=2, clock=fake.clock, sleep=fake.sleep)
    waits = [await bucket.acquire() for _ in range(5)]
    assert waits[:2] == [0.0, 0.0]  # the burst
    assert waits[2:] == pytest.approx([0.5, 0.5, 0.5])
    fake.now += 10  # idle: refills to the burst, not beyond
    assert [await bucket.acquire() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.5])


def test_token_bucket_rejects_nonpositive_rate() -> None:
    with pytest.raises(ValueError):
        TokenBucket(0)
