"""tau_bench.llm.complete: real litellm calls, answered by respx in each provider's wire format."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
import respx

from tau_adapters.protocol import AdapterAuthError, AdapterError
from tau_bench import llm
from tau_bench.fakes import ChatReply, ChatRequest, OpenAIServer
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


@pytest.fixture(autouse=True)
def litellm_path() -> Any:
    """This module tests the litellm path (auto would send OpenAI calls direct);
    test_direct.py holds the direct path to the same behaviour."""
    llm.set_llm_path("litellm")
    yield
    llm.set_llm_path("auto")


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
    assert llm.client_counts() == {provider: 1}  # litellm was handed our pooled client
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
    assert (
        limited.value.retryable and limited.value.attempts == llm.config.DEFAULT_RETRY.max_attempts
    )


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

    llm.configure_litellm()
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"


def test_importing_the_llm_layer_changes_no_environment() -> None:
    """No process-wide side effects at import: a fresh interpreter that imports the
    package sees the same environment as before, and litellm is not imported."""
    import os
    import subprocess
    import sys

    code = (
        "import os, sys; before = dict(os.environ); import tau_bench.llm; "
        "changed = sorted(k for k in os.environ if os.environ.get(k) != before.get(k)); "
        "print(changed, 'litellm' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("LITELLM_LOCAL_MODEL_COST_MAP",)}
    env.pop(llm.OPENAI_HANDLER_ENV, None)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "False"]


# ---------------------------------------------------------------------------- API keys


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        ("openai/gpt-4o", "OPENAI_API_KEY"),
        ("gpt-4o", "OPENAI_API_KEY"),
        ("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("gemini/gemini-2.5-flash", "GEMINI_API_KEY"),
    ],
)
async def test_a_missing_api_key_fails_fast_as_an_auth_error(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, model: str, variable: str
) -> None:
    for name in (*TEST_KEYS, "GOOGLE_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(LLMAuthError) as caught:
        await complete(LLMConfig(model=model), HELLO)

    error = caught.value
    assert fake_llm.requests == []  # nothing was sent, nothing retried
    assert error.kind == "auth_error" and error.retryable is False and error.retries == []
    assert f"no API key: set {variable}" in str(error) or variable in str(error)
    assert "after" not in str(error)


async def test_a_key_in_llm_extra_or_a_custom_api_base_needs_no_environment_key(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    fake_llm.brain = _echo
    own_key = "sk-own-key-from-options-1234"
    completion = await complete(LLMConfig(model="openai/gpt-4o", extra={"api_key": own_key}), HELLO)
    assert completion.content == "HELLO THERE"
    assert fake_llm.requests[0].headers["authorization"] == f"Bearer {own_key}"

    local = LLMConfig(model="openai/my-llama", api_base="http://127.0.0.1:8000/v1")
    assert (await complete(local, HELLO)).content == "HELLO THERE"  # a keyless local server

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8001/v1")  # named by the env
    assert (await complete(LLMConfig(model="openai/my-llama"), HELLO)).content == "HELLO THERE"
    assert fake_llm.requests[-1].url == "http://127.0.0.1:8001/v1/chat/completions"


@pytest.mark.parametrize(
    "message",
    [
        "InternalServerError: OpenAIException - Missing credentials. Please pass an `api_key`",
        "Missing Gemini API key. Set the GEMINI_API_KEY or GOOGLE_API_KEY environment variable.",
        "The api_key client option must be set either by passing api_key to the client",
    ],
)
def test_missing_credential_errors_are_auth_errors_not_retried(message: str) -> None:
    import litellm

    exc = litellm.InternalServerError(message=message, llm_provider="openai", model="gpt-4o")
    assert llm.classify(exc) == (LLMAuthError, False)
    assert llm.classify(RuntimeError("connection reset by peer"))[0] is not LLMAuthError


# ---------------------------------------------------------------------------- cost


class _Priced:
    def __init__(self, hidden: dict[str, Any]) -> None:
        self._hidden_params = hidden


def test_cost_reuses_what_litellm_computed() -> None:
    import litellm

    assert llm.response.cost(litellm, _Priced({"response_cost": 0.25})) == 0.25
    assert llm.response.cost(litellm, _Priced({"response_cost": None})) == 0.0  # unpriced model
    assert llm.response.cost(litellm, object()) == 0.0  # nothing to price: 0, no crash


# ---------------------------------------------------------------------------- clients


class HeldReplies:
    """A reply function for the fake OpenAI server that answers a round of `size`
    requests only once all of them have arrived (so they are all in flight at once)."""

    def __init__(self) -> None:
        self.size = 1
        self.arrived = 0
        self.gate = asyncio.Event()

    async def __call__(self, request: ChatRequest) -> ChatReply:
        gate = self.gate
        self.arrived += 1
        if self.arrived == self.size:
            self.arrived, self.gate = 0, asyncio.Event()
            gate.set()
        await asyncio.wait_for(gate.wait(), 30)
        return ChatReply(text="ok", usage=(1, 1))


async def test_concurrent_calls_keep_their_connections_alive(llm_env: None) -> None:
    """24 calls at once, three times: 24 connections in all (litellm's default client
    keeps at most 20 idle and reopens the rest on every round), spread over clients of
    `SHARD_CALLS` calls each, closed by `aclose_clients`."""
    held = HeldReplies()
    with OpenAIServer(held) as server:
        config = LLMConfig(model="openai/local-model", api_base=server.base_url, max_attempts=1)
        try:
            assert (await complete(config, HELLO)).content == "ok"
            for _ in range(3):
                held.size = 24
                results = await asyncio.gather(*(complete(config, HELLO) for _ in range(24)))
                assert [r.content for r in results] == ["ok"] * 24
            assert server.stats()["connections"] == 24
            assert llm.client_counts() == {"openai": 24 // llm.SHARD_CALLS}
        finally:
            await llm.aclose_clients()
    assert llm.client_counts() == {}


async def test_the_openai_sdk_route_still_works(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(llm.OPENAI_HANDLER_ENV, "False")
    fake_llm.brain = _echo
    completion = await complete(LLMConfig(model="openai/gpt-4o"), HELLO)
    assert completion.content == "HELLO THERE" and completion.usage.cost > 0
    assert llm.client_counts() == {}  # litellm's own clients, not ours
