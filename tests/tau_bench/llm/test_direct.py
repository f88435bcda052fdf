"""The direct model-call path: the same body, answer, retries, errors, redaction and
records as the litellm path, against the real fake server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import gc
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tau_bench.config import RunConfig
from tau_bench.fakes.openai_server import ChatReply, ChatRequest, OpenAIServer
from tau_bench.fakes.replay import Replay
from tau_bench.llm import (
    LLMAuthError,
    LLMBadRequestError,
    LLMConfig,
    LLMContextWindowError,
    LLMRateLimitError,
    LLMUnavailableError,
    aclose_clients,
    complete,
    set_llm_path,
)
from tau_bench.llm.direct import (
    ToolSchemas,
    _dumps,
    compact_json,
    encode_body,
    is_exact,
    refusal,
    request_body,
    run_llm_path,
    use_direct,
)
from tau_bench.llm.direct_clients import TRANSPORT_ENV, aiohttp_transport
from tau_bench.llm.retry import RetryPolicy
from tau_bench.runner import Runner, prepare_run
from tests.conftest import DATA_DIR

PATHS = ("litellm", "direct")
HISTORICAL = DATA_DIR / "historical_trajectories" / "gpt-4o-airline.json"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_user_details",
            "description": "Look a user up.",
            "parameters": {"type": "object", "properties": {"user_id": {"type": "string"}}},
        },
    }
]
HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "policy"},
    {"role": "user", "content": "I am mia_li_3668."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_user_details", "arguments": '{"user_id": "m"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "name": "get_user_details", "content": "{}"},
]


async def _no_sleep(seconds: float) -> None:
    return None


POLICY = RetryPolicy(max_attempts=3, initial_wait=0.0, jitter=0.0, sleep=_no_sleep)


@pytest.fixture(autouse=True, params=["aiohttp", "httpx"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every test on both transports of the direct clients (aiohttp when installed)."""
    monkeypatch.setenv(TRANSPORT_ENV, request.param)
    assert aiohttp_transport() is (request.param == "aiohttp")
    yield request.param
    set_llm_path("auto")


async def call_both(respond: Any, **kw: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One `complete` per path, each against a fresh server (so the fake's tool-call ids
    match): what each returned (or raised), and the bodies the server received."""
    out: dict[str, Any] = {}
    bodies: list[dict[str, Any]] = []
    for path in PATHS:
        set_llm_path(path)
        with OpenAIServer(respond, latency=0.0) as server:
            config = LLMConfig(
                "openai/gpt-4o-mini", api_base=server.base_url, seed=7, retry=POLICY, **kw
            )
            try:
                out[path] = await complete(config, HISTORY, tools=TOOLS)
            except Exception as exc:
                out[path] = exc
            finally:
                await aclose_clients()
            bodies += [r.body for r in server.requests]
    return out, bodies


def test_auto_takes_the_direct_path_only_where_it_is_exact() -> None:
    base = "http://127.0.0.1:1/v1"
    assert is_exact(LLMConfig("gpt-4o"), {})
    assert is_exact(LLMConfig("openai/my-vllm-model", api_base=base), {"max_tokens": 5})
    assert is_exact(LLMConfig("m", provider="openai", api_base=base), {})
    assert not is_exact(LLMConfig("o3-mini"), {})  # litellm rewrites its parameters
    assert not is_exact(LLMConfig("anthropic/claude-3-5-sonnet-20241022"), {})
    assert not is_exact(LLMConfig("gpt-4o", extra={"mock_response": "hi"}), {})
    assert not is_exact(LLMConfig("gpt-4o"), {"response_format": object()})
    set_llm_path("litellm")
    assert not use_direct(LLMConfig("gpt-4o"), {})
    set_llm_path("direct")
    assert use_direct(LLMConfig("anthropic/claude-3-5-sonnet-20241022"), {})
    with pytest.raises(ValueError, match="unknown llm path"):
        set_llm_path("fast")


@pytest.mark.parametrize(
    "model",
    ["anthropic/claude-3-5-haiku-latest", "groq/llama3-8b-8192", "azure/my-deployment"],
)
async def test_forced_direct_refuses_a_model_of_another_provider_before_any_call(
    model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It would reach OpenAI's API (or `OPENAI_BASE_URL`'s server) under a name that
    server does not serve; the key check does not come first either (a key would not
    help)."""
    for name in ("ANTHROPIC_API_KEY", "GROQ_API_KEY", "AZURE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with OpenAIServer(lambda request: ChatReply(text="never")) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        with run_llm_path("direct"), pytest.raises(LLMBadRequestError) as refused:
            await complete(LLMConfig(model), [{"role": "user", "content": "hi"}])
        served = len(server.requests)
    assert served == 0
    assert str(refused.value).startswith(
        f"--llm-path direct sends OpenAI-format calls only, and {model} goes to litellm "
        f"provider {model.split('/')[0]}: name an OpenAI-compatible endpoint's model as "
        "openai/<name> with its api_base"
    )
    assert refused.value.attempts == 0 and not refused.value.retryable


def test_forced_direct_takes_any_openai_format_model() -> None:
    base = "http://127.0.0.1:1/v1"
    assert refusal(LLMConfig("o3-mini")) is None  # not exact, but OpenAI's
    assert refusal(LLMConfig("openai/claude-via-gateway", api_base=base)) is None
    assert refusal(LLMConfig("claude-via-gateway", provider="openai", api_base=base)) is None


async def test_both_paths_send_the_same_body_and_return_the_same_completion() -> None:
    def respond(request: ChatRequest) -> ChatReply:
        return ChatReply(text="Found you.", tool_calls=[("get_user_details", {"user_id": "x"})])

    got, bodies = await call_both(respond, top_p=0.5, extra={"max_tokens": 64})
    assert bodies[0] == bodies[1]
    assert bodies[0]["model"] == "gpt-4o-mini" and "content" not in bodies[0]["messages"][2]
    litellm_answer, direct_answer = got["litellm"], got["direct"]
    assert direct_answer.message == litellm_answer.message
    assert direct_answer.message["tool_calls"][0]["function"]["name"] == "get_user_details"
    assert direct_answer.usage == litellm_answer.usage
    assert direct_answer.usage.cost > 0 and direct_answer.usage.calls == 1
    assert direct_answer.raw["choices"][0]["message"]["content"] == "Found you."


def test_importing_litellm_freezes_the_objects_alive_then() -> None:
    from tau_bench.llm.runtime import litellm

    module = litellm()
    assert litellm() is module and module.suppress_debug_info
    assert gc.get_freeze_count() > 100_000  # litellm's import alone leaves more


def test_the_encoded_body_is_the_body_with_the_tools_json_encoded_once() -> None:
    tools = ToolSchemas(TOOLS)
    config = LLMConfig("openai/gpt-4o-mini", seed=7, extra={"extra_body": {"top_k": 3}})
    body, _ = request_body(config, HISTORY, tools, {"max_tokens": 9})
    assert json.loads(encode_body(body)) == {**body, "tools": TOOLS}
    assert body["top_k"] == 3 and body["max_tokens"] == 9
    assert json.loads(encode_body({"tools": tools})) == {"tools": TOOLS}
    assert json.loads(encode_body({**body, "tools": list(TOOLS)})) == {**body, "tools": TOOLS}
    assert tools.json is tools.json  # encoded once
    assert list(ToolSchemas(())) == [] and not ToolSchemas(())


SAME_JSON = [
    {"model": "m", "messages": [{"role": "user", "content": "Größe 42 — 東京 ✈ \u2028"}]},
    {"a": [1, -0.0, 2.5, 1e-7, 1e16, True, False, "", {}, []], "b": {"c": {"d": '\\"'}}},
    {"content": "the word null inside a string", "n": None},
    {1: "an integer key", "t": (1, 2)},
    {"big": 2**70, "small": -(2**64)},
    {"nested": [[[[[[[[[[{"k": [1.5]}]]]]]]]]]]},
    "x" * 100_000,
]


@pytest.mark.parametrize("value", SAME_JSON)
def test_compact_json_is_the_standard_librarys_compact_json(value: Any) -> None:
    assert json.loads(compact_json(value)) == json.loads(_dumps(value).encode())


def test_compact_json_keeps_the_deep_and_refuses_what_the_standard_library_refuses() -> None:
    deep: Any = "leaf"
    for _ in range(500):  # beyond orjson's nesting limit, within the standard library's
        deep = [deep]
    assert compact_json(deep) == _dumps(deep).encode()
    for bad in ({"t": float("nan")}, {"t": [float("inf")]}, {"t": -float("inf")}):
        with pytest.raises(ValueError):  # as before: the SDK's own encoder takes it then
            compact_json(bad)
    with pytest.raises(UnicodeEncodeError):
        compact_json({"content": "\ud800"})
    with pytest.raises(TypeError):
        compact_json({"when": object()})


def test_a_body_with_nan_goes_to_the_sdks_encoder_as_before() -> None:
    body, _ = request_body(LLMConfig("openai/gpt-4o-mini"), HISTORY, None, {})
    with pytest.raises(ValueError):
        encode_body({**body, "logit_bias": {"50256": float("nan")}})
    with pytest.raises(ValueError):
        encode_body({**body, "tools": ToolSchemas([{"type": "function", "x": float("inf")}])})


async def test_tool_schemas_reach_the_server_as_a_list_of_the_same_tools() -> None:
    with OpenAIServer(lambda request: ChatReply(text="ok"), latency=0.0) as server:
        set_llm_path("direct")
        config = LLMConfig("openai/gpt-4o-mini", api_base=server.base_url, retry=POLICY)
        await complete(config, HISTORY, tools=ToolSchemas(TOOLS))
        await complete(config, HISTORY, tools=TOOLS)
        await aclose_clients()
    first, second = (r.body for r in server.requests)
    assert first == second and first["tools"] == TOOLS
    assert server.requests[0].headers["content-type"] == "application/json"
    assert server.requests[0].headers["authorization"].startswith("Bearer ")


async def test_retries_are_recorded_alike_on_both_paths() -> None:
    answers: list[ChatReply] = []

    def respond(request: ChatRequest) -> ChatReply:
        return answers.pop(0)

    with OpenAIServer(respond, latency=0.0) as server:
        got = {}
        for path in PATHS:
            answers[:] = [
                ChatReply(status=429, error="slow down", headers={"Retry-After": "0"}),
                ChatReply(status=503, error="overloaded"),
                ChatReply(text="ok"),
            ]
            set_llm_path(path)
            config = LLMConfig("openai/gpt-4o-mini", api_base=server.base_url, retry=POLICY)
            got[path] = await complete(config, HISTORY[:2])
            await aclose_clients()
    for path in PATHS:
        assert got[path].content == "ok"
        assert [(r.attempt, r.kind, r.status, r.wait) for r in got[path].retries] == [
            (1, "rate_limited", 429, 0.0),
            (2, "llm_unavailable", 503, 0.0),
        ]


@pytest.mark.parametrize(
    ("reply", "error", "retryable", "attempts"),
    [
        (ChatReply(status=401, error="invalid key"), LLMAuthError, False, 1),
        (
            ChatReply(status=400, error="This model's maximum context length is 128000 tokens"),
            LLMContextWindowError,
            False,
            1,
        ),
        (
            ChatReply(status=429, error="quota", headers={"Retry-After": "0"}),
            LLMRateLimitError,
            True,
            3,
        ),
        (ChatReply(status=503, error="down"), LLMUnavailableError, True, 3),
    ],
)
async def test_final_errors_have_the_same_class_on_both_paths(
    reply: ChatReply, error: type[Exception], retryable: bool, attempts: int
) -> None:
    got, _ = await call_both(lambda request: reply)
    for path in PATHS:
        exc = got[path]
        assert type(exc) is error, (path, exc)
        assert exc.retryable is retryable and exc.attempts == attempts
        assert exc.provider == "openai" and exc.model == "openai/gpt-4o-mini"


async def test_error_text_never_carries_the_api_key() -> None:
    secret = "sk-direct-path-secret-123456"
    reply = ChatReply(status=400, error=f"key {secret} is not allowed for this model")
    got, _ = await call_both(lambda request: reply, extra={"api_key": secret})
    for path in PATHS:
        assert secret not in str(got[path]), path
        assert "not allowed" in str(got[path])


async def test_an_unreachable_endpoint_is_unavailable_after_the_retries() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed when the block ends: nobody listens there
    set_llm_path("direct")
    config = LLMConfig("openai/m", api_base=f"http://127.0.0.1:{port}/v1", retry=POLICY)
    with pytest.raises(LLMUnavailableError) as info:
        await complete(config, HISTORY[:2])
    await aclose_clients()
    assert info.value.retryable and info.value.attempts == 3
    assert [r.kind for r in info.value.retries] == ["llm_unavailable"] * 2


def replay_run(tmp_path: Any, path: str, task_ids: list[int]) -> list[tuple[Any, ...]]:
    """The historical gpt-4o airline answers replayed through `path` (a fresh server,
    one episode at a time: the fake's tool-call ids then match between runs)."""
    replay = Replay.from_file(HISTORICAL)
    with OpenAIServer(replay, latency=0.0) as server:
        config = RunConfig(
            env="airline",
            agent_strategy="tool-calling",
            model="gpt-4o",
            model_provider="openai",
            api_base=server.base_url,
            user_strategy="llm",
            user_model="gpt-4o",
            user_model_provider="openai",
            user_api_base=server.base_url,
            task_ids=task_ids,
            llm_path=path,
            data_dir=str(DATA_DIR),
            log_dir=str(tmp_path),
            run_name=f"{path}_{time.monotonic_ns()}",
            quiet=True,
        )
        outcome = asyncio.run(Runner(prepare_run(config)).run())
    assert outcome.summary["errors"] == 0
    return [(r.task_id, r.reward, r.agent_usage, r.user_usage) for r in outcome.records]


def test_the_replayed_gpt4o_airline_run_is_identical_on_both_paths(tmp_path: Any) -> None:
    ids = list(range(8))
    litellm_rows = replay_run(tmp_path, "litellm", ids)
    direct_rows = replay_run(tmp_path, "direct", ids)
    assert direct_rows == litellm_rows  # rewards, costs and tokens, exactly
    assert any(reward == 1.0 for _, reward, _, _ in direct_rows)
    assert all(agent["calls"] > 1 and agent["cost"] > 0 for _, _, agent, _ in direct_rows)
