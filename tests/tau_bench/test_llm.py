"""tau_bench.llm: real litellm calls, answered by respx in each provider's wire format."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
import respx

from tau_adapters.protocol import AdapterAuthError, AdapterError
from tau_bench import llm
from tau_bench.llm import (
    LLMAuthError,
    LLMBadRequestError,
    LLMConfig,
    LLMContextWindowError,
    LLMRateLimitError,
    LLMUnavailableError,
    RetryPolicy,
    complete,
    redact,
    set_provider_limits,
)
from tests.tau_bench.agents.fake_llm import TEST_KEYS, FakeLLM, Reply, Request, fake_llm, llm_env

__all__ = ["fake_llm", "llm_env"]

HELLO = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello there"}]


def _echo(request: Request) -> Reply:
    return Reply(text=request.last_text.upper())


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("openai/gpt-4o", "openai"),
        ("gpt-4o", "openai"),
        ("anthropic/claude-sonnet-4-5", "anthropic"),
        ("gemini/gemini-2.5-flash", "gemini"),
    ],
)
async def test_shapes_usage_and_cost(fake_llm: FakeLLM, model: str, provider: str) -> None:
    fake_llm.brain = _echo
    completion = await complete(LLMConfig(model=model, seed=7), HELLO)

    assert completion.content == "HELLO THERE"
    assert completion.message == {"role": "assistant", "content": "HELLO THERE"}
    assert completion.retries == [] and completion.extra() == {}
    request = fake_llm.requests[0]
    assert request.provider == provider and request.system == "Be brief."
    usage = completion.usage
    assert usage.calls == 1
    assert usage.prompt_tokens == max(1, len(json.dumps(request.body)) // 4)
    assert usage.completion_tokens == max(1, len("HELLO THERE[]") // 4)
    assert usage.cost > 0
    if provider == "openai":
        import litellm

        prices = litellm.model_cost["gpt-4o"]
        expected = (
            usage.prompt_tokens * prices["input_cost_per_token"]
            + usage.completion_tokens * prices["output_cost_per_token"]
        )
        assert usage.cost == pytest.approx(expected)
        assert request.body["seed"] == 7 and request.body["temperature"] == 0.0
        assert request.headers["authorization"] == f"Bearer {TEST_KEYS['OPENAI_API_KEY']}"


async def test_parameters_a_model_rejects_are_dropped(fake_llm: FakeLLM) -> None:
    fake_llm.brain = _echo
    await complete(LLMConfig(model="openai/o3-mini", temperature=0.0, seed=1), HELLO)
    body = fake_llm.requests[0].body
    assert "temperature" not in body and body["model"] == "o3-mini"


@pytest.mark.parametrize(
    ("config", "model_sent"),
    [
        (LLMConfig(model="openai/my-llama", api_base="http://127.0.0.1:8000/v1"), "my-llama"),
        (
            LLMConfig(model="my-llama", provider="openai", api_base="http://127.0.0.1:9/v1"),
            "my-llama",
        ),
    ],
)
async def test_api_base_for_openai_compatible_servers(
    fake_llm: FakeLLM, config: LLMConfig, model_sent: str
) -> None:
    fake_llm.brain = _echo
    completion = await complete(config, HELLO)
    request = fake_llm.requests[0]
    assert request.url == f"{config.api_base}/chat/completions"
    assert request.body["model"] == model_sent
    assert completion.content == "HELLO THERE"
    assert completion.usage.cost == 0.0  # an unknown model has no price: 0, no crash


def _failing_then_ok(*failures: Reply):
    def brain(request: Request) -> Reply:
        if len(fake_llm_calls) < len(failures):
            fake_llm_calls.append(request)
            return failures[len(fake_llm_calls) - 1]
        return Reply(text=f"ok after {len(fake_llm_calls)} failures")

    fake_llm_calls: list[Request] = []
    return brain


@pytest.mark.parametrize(
    "model", ["openai/gpt-4o", "anthropic/claude-sonnet-4-5", "gemini/gemini-2.5-flash"]
)
async def test_429_with_retry_after_is_retried(fake_llm: FakeLLM, model: str) -> None:
    fake_llm.brain = _failing_then_ok(
        Reply(status=429, headers={"Retry-After": "0"}, error="slow down")
    )
    completion = await complete(LLMConfig(model=model), HELLO)

    assert completion.content == "ok after 1 failures"
    assert len(fake_llm.requests) == 2
    [retry] = completion.retries
    assert (retry.attempt, retry.kind, retry.status, retry.wait) == (1, "rate_limited", 429, 0.0)
    assert completion.extra() == {"retries": [retry.to_dict()]}


async def test_503_twice_is_retried(fake_llm: FakeLLM) -> None:
    unavailable = Reply(status=503, error="overloaded")
    fake_llm.brain = _failing_then_ok(unavailable, unavailable)
    completion = await complete(LLMConfig(model="openai/gpt-4o"), HELLO)

    assert completion.content == "ok after 2 failures"
    assert [(r.attempt, r.kind, r.status) for r in completion.retries] == [
        (1, "llm_unavailable", 503),
        (2, "llm_unavailable", 503),
    ]
    assert len(fake_llm.requests) == 3


async def test_retry_after_is_honoured_and_capped(fake_llm: FakeLLM) -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    fake_llm.brain = _failing_then_ok(
        Reply(status=429, headers={"Retry-After": "7"}),
        Reply(status=429, headers={"Retry-After": "3600"}),
        Reply(status=500),
    )
    policy = RetryPolicy(initial_wait=2.0, jitter=0.0, max_retry_after=60.0, sleep=fake_sleep)
    completion = await complete(LLMConfig(model="openai/gpt-4o", retry=policy), HELLO)

    assert completion.content == "ok after 3 failures"
    assert slept == [7.0, 60.0, 8.0]  # asked, capped, then backoff 2 * 2**2
    assert [r.wait for r in completion.retries] == slept


def test_backoff_is_exponential_bounded_and_jittered() -> None:
    policy = RetryPolicy(initial_wait=1.0, max_wait=10.0, jitter=0.0)
    assert [policy.backoff(n) for n in range(1, 7)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    jittered = [RetryPolicy(initial_wait=1.0, jitter=0.5).backoff(2) for _ in range(50)]
    assert all(2.0 <= w <= 2.5 for w in jittered) and len(set(jittered)) > 1


@pytest.mark.parametrize(
    ("status", "message", "error_type", "kind"),
    [
        (400, "Invalid value for 'tools'", LLMBadRequestError, "bad_request"),
        (
            400,
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 200000 tokens.",
            LLMContextWindowError,
            "context_window_exceeded",
        ),
        (
            401,
            f"Incorrect API key provided: {TEST_KEYS['OPENAI_API_KEY']}",
            LLMAuthError,
            "auth_error",
        ),
        (403, "Project does not have access", LLMAuthError, "auth_error"),
    ],
)
async def test_client_errors_are_not_retried(
    fake_llm: FakeLLM, status: int, message: str, error_type: type, kind: str
) -> None:
    fake_llm.brain = _failing_then_ok(Reply(status=status, error=message))
    with pytest.raises(error_type) as caught:
        await complete(LLMConfig(model="openai/gpt-4o"), HELLO)

    error = caught.value
    assert len(fake_llm.requests) == 1
    assert isinstance(error, AdapterError) and isinstance(error, llm.LLMError)
    assert error.kind == kind
    assert error.retryable is False and error.attempts == 1 and error.status == status
    assert isinstance(error, AdapterAuthError) == (status in (401, 403))
    text = str(error)
    assert TEST_KEYS["OPENAI_API_KEY"] not in text
    assert text.startswith("openai/gpt-4o (openai): ")
    if status == 401:
        assert "Incorrect API key provided: ***" in text
    else:
        assert message[:20] in text


async def test_anthropic_and_gemini_auth_errors(fake_llm: FakeLLM) -> None:
    fake_llm.brain = lambda request: Reply(status=401, error="invalid x-api-key")
    for model in ("anthropic/claude-sonnet-4-5", "gemini/gemini-2.5-flash"):
        with pytest.raises(LLMAuthError):
            await complete(LLMConfig(model=model), HELLO)
    assert len(fake_llm.requests) == 2


async def test_exhausted_retries_raise_a_retryable_error(fake_llm: FakeLLM) -> None:
    fake_llm.brain = lambda request: Reply(status=503, error="overloaded")
    with pytest.raises(LLMUnavailableError) as caught:
        await complete(LLMConfig(model="openai/gpt-4o", max_attempts=3), HELLO)
    error = caught.value
    assert len(fake_llm.requests) == 3
    assert error.retryable is True and error.attempts == 3 and len(error.retries) == 2
    assert "after 3 attempts" in str(error)

    fake_llm.brain = lambda request: Reply(status=429)
    with pytest.raises(LLMRateLimitError) as limited:
        await complete(LLMConfig(model="openai/gpt-4o"), HELLO)
    assert limited.value.retryable and limited.value.attempts == llm.DEFAULT_RETRY.max_attempts


def _ok_response() -> httpx.Response:
    message = {"role": "assistant", "content": "ok"}
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        },
    )


async def _peak_concurrency(calls: int, expect_in_flight: int) -> int:
    """Start `calls` calls; hold requests in the handler until `expect_in_flight` have
    arrived, check no more did, then let all finish. Returns the most seen at once."""
    arrived = 0
    in_flight = 0
    peak = 0
    enough = asyncio.Event()
    release = asyncio.Event()

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal arrived, in_flight, peak
        arrived += 1
        in_flight += 1
        peak = max(peak, in_flight)
        if arrived == expect_in_flight:
            enough.set()
        await release.wait()
        in_flight -= 1
        return _ok_response()

    with respx.mock(assert_all_mocked=True) as router:
        router.post("https://api.openai.com/v1/chat/completions").mock(side_effect=handler)
        config = LLMConfig(model="openai/gpt-4o", max_attempts=1)
        everything = asyncio.gather(*(complete(config, HELLO) for _ in range(calls)))
        waiter = asyncio.ensure_future(enough.wait())
        pending: set[asyncio.Future[Any]] = {everything, waiter}
        await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        assert waiter.done(), "the calls finished without ever being held"
        # All calls run the same code in FIFO turns: by the time the held ones reach the
        # handler, every other call has reached the handler or queued on the cap.
        assert arrived == expect_in_flight
        release.set()
        results = await everything
    assert [r.content for r in results] == ["ok"] * calls
    return peak


async def test_provider_limits_cap_concurrency(llm_env: None) -> None:
    set_provider_limits({"openai": 2, "anthropic": 1})
    assert llm.provider_limits() == {"openai": 2, "anthropic": 1}
    assert await _peak_concurrency(calls=4, expect_in_flight=2) == 2
    set_provider_limits({"anthropic": 1})
    assert await _peak_concurrency(calls=4, expect_in_flight=4) == 4
    with pytest.raises(ValueError):
        set_provider_limits({"openai": 0})


def test_redact() -> None:
    text = (
        "key sk-abcdef123456 bearer: Bearer tok.en-value url https://x/y?key=AIzaSyABCDEFGHIJKLMNOP "
        "and 'api_key': 'hunter22secret' and my-own-secret-value"
    )
    out = redact(text, ["my-own-secret-value"])
    for secret in (
        "sk-abcdef123456",
        "tok.en-value",
        "AIzaSyABCDEFGHIJKLMNOP",
        "hunter22secret",
        "my-own-secret-value",
    ):
        assert secret not in out
    assert out.count("***") >= 5


def test_litellm_never_fetches_its_price_map() -> None:
    import os

    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
