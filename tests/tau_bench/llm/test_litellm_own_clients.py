"""Replies litellm reads with HTTP clients it builds itself (every provider but the pooled
OpenAI, Anthropic and Gemini ones, with its async or its sync clients; the OpenAI SDK
route) are bounded by the call's
`max_response_bytes` like the others: the same typed error, the read stopped early, a
compression bomb never decoded, against a real server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import gzip
import tracemalloc
import warnings
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tau_bench.llm import (
    OPENAI_HANDLER_ENV,
    Completion,
    LLMConfig,
    LLMError,
    aclose_clients,
    complete,
    set_llm_path,
)
from tau_bench.llm.runtime import litellm
from tau_bench.llm.wire import (
    CallBoundedSyncTransport,
    CallBoundedTransport,
    _hook,
    bound_litellm_clients,
    call_limit,
    reply_error,
)
from tests.tau_bench.llm.call_paths import CALL_DEADLINE, MESSAGES, call_once, no_wait_policy
from tests.tau_bench.llm.counting_server import CountingServer
from tests.tau_bench.llm.local_http import STOP_DEADLINE
from tests.tau_bench.llm.raw_server import Raw, RawServer, as_json, chat, gzip_bomb

MIB = 1 << 20
POLICY = no_wait_policy(3)

ROUTES = {
    # provider handlers on litellm's `get_async_httpx_client`
    "mistral": "mistral/mistral-large-latest",
    "ollama_chat": "ollama_chat/llama3",
    # the OpenAI SDK route, on `BaseOpenAILLM._get_async_http_client`
    "openai-sdk": "openai/gpt-4o-mini",
    # a provider litellm reaches only with its synchronous `HTTPHandler`, in a thread
    "maritalk-sync": "maritalk/sabia-3",
}


def ollama(content: str) -> Raw:
    """An Ollama /api/chat answer."""
    return as_json(
        {
            "model": "llama3",
            "created_at": "2025-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": content},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 10,
            "eval_count": 5,
        }
    )


def gzipped(raw: Raw) -> Raw:
    """`raw` gzip-compressed."""
    return Raw(gzip.compress(raw.body), headers={**raw.headers, "Content-Encoding": "gzip"})


@pytest.fixture(params=list(ROUTES))
def route(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test through litellm's own clients of a provider route."""
    name = str(request.param)
    litellm()  # imported (its environment defaults set) before any memory is measured
    monkeypatch.setenv(OPENAI_HANDLER_ENV, "False" if name == "openai-sdk" else "True")
    set_llm_path("litellm")
    yield name
    set_llm_path("auto")


async def call(base_url: str, model: str, **kw: Any) -> Completion | LLMError:
    """One `complete` against `base_url`: the completion, or the `LLMError` it raised."""
    return await call_once(base_url, POLICY, model, extra={"api_key": "sk-test-not-a-key"}, **kw)


def assert_too_large(got: Completion | LLMError, limit: int) -> None:
    assert isinstance(got, LLMError), got
    assert got.kind == "reply_too_large" and not got.retryable and got.attempts == 1
    assert f"larger than the {limit} bytes allowed (max_response_bytes)" in str(got)


@pytest.mark.parametrize("length", [True, False], ids=["content-length", "until-close"])
async def test_a_reply_over_the_limit_fails_and_is_not_read_on(route: str, length: bool) -> None:
    with CountingServer(128 * MIB, length=length) as server:
        got = await call(server.base_url, ROUTES[route], max_response_bytes=MIB)
        assert server.done.wait(STOP_DEADLINE)  # the client left: the server stopped
    assert_too_large(got, MIB)
    assert server.posts == 1  # the same request would get the same answer
    assert server.sent < 32 * MIB  # a few socket buffers past the limit, not 128 MiB


async def test_a_gzip_bomb_fails_within_the_limit_without_being_decoded(route: str) -> None:
    with RawServer(lambda: gzip_bomb(128)) as server:  # 128 KiB on the wire
        await call(server.base_url, ROUTES[route], max_response_bytes=MIB)  # warm-up
        tracemalloc.start()
        try:
            got = await call(server.base_url, ROUTES[route])  # the default limit, 16 MiB
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    assert_too_large(got, 16 * MIB)
    assert server.posts == 2
    assert peak < 64 * MIB  # the 128 MiB it decodes to were never held


async def test_a_reply_within_the_limit_is_read_compressed_or_not(route: str) -> None:
    answer = ollama if route == "ollama_chat" else (lambda text: as_json(chat(content=text)))
    replies = [answer("hello"), gzipped(answer("A" * MIB))]
    with RawServer(lambda: replies.pop(0)) as server:
        plain = await call(server.base_url, ROUTES[route], max_response_bytes=2 * MIB)
        packed = await call(server.base_url, ROUTES[route], max_response_bytes=2 * MIB)
    assert isinstance(plain, Completion), plain
    assert plain.content == "hello"
    assert isinstance(packed, Completion), packed
    assert packed.content == "A" * MIB


async def test_each_call_reads_within_its_own_limit_on_litellms_shared_client() -> None:
    """Two concurrent calls to one provider share litellm's cached client: each is
    bounded by its own `max_response_bytes`, not the first one's."""
    litellm()
    set_llm_path("litellm")
    model = ROUTES["mistral"]
    reply = as_json(chat(content="x" * (2 * MIB)))
    try:
        with RawServer(lambda: reply) as server:
            strict, generous = await asyncio.gather(
                call(server.base_url, model, max_response_bytes=MIB),
                call(server.base_url, model, max_response_bytes=4 * MIB),
            )
            again = await call(server.base_url, model, max_response_bytes=MIB)
    finally:
        set_llm_path("auto")
    assert_too_large(strict, MIB)
    assert isinstance(generous, Completion), generous
    assert generous.content == "x" * (2 * MIB)
    assert_too_large(again, MIB)


async def test_litellm_builds_its_clients_through_the_bounded_builders() -> None:
    """Fails when litellm stops building its async clients where the bound is put."""
    module = litellm()
    from litellm.llms.custom_httpx.http_handler import get_async_httpx_client
    from litellm.llms.openai.common_utils import BaseOpenAILLM

    handler = get_async_httpx_client(llm_provider="mistral", params={"ssl_verify": None})
    sdk_client = BaseOpenAILLM.get_async_http_client()
    try:
        for client in (handler.client, sdk_client):
            assert isinstance(client, httpx.AsyncClient), client
            assert isinstance(client._transport, CallBoundedTransport), client._transport
            assert all(isinstance(t, CallBoundedTransport) for t in client._mounts.values() if t)
        await handler.client.aclose()  # litellm makes a new client for a closed one: bounded
        assert isinstance(handler.client._transport, CallBoundedTransport)
    finally:
        await handler.client.aclose()
        if sdk_client is not None:
            await sdk_client.aclose()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every builder is still there
        bound_litellm_clients(module)  # and hooking twice changes nothing
    rebuilt = BaseOpenAILLM.get_async_http_client()
    assert rebuilt is not None and isinstance(rebuilt._transport, CallBoundedTransport)
    await rebuilt.aclose()


def test_litellm_builds_its_sync_clients_through_the_bounded_builders() -> None:
    """Fails when litellm stops building its synchronous clients where the bound is put."""
    litellm()
    from litellm.llms.custom_httpx.http_handler import HTTPHandler
    from litellm.llms.openai.common_utils import BaseOpenAILLM

    handler = HTTPHandler()
    sdk_client = BaseOpenAILLM._get_sync_http_client()
    try:
        for client in (handler.client, sdk_client):
            assert isinstance(client, httpx.Client), client
            assert isinstance(client._transport, CallBoundedSyncTransport), client._transport
            assert all(
                isinstance(t, CallBoundedSyncTransport) for t in client._mounts.values() if t
            )
    finally:
        handler.close()
        if sdk_client is not None:
            sdk_client.close()


async def test_a_client_of_the_callers_own_is_left_as_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = litellm()
    from litellm.llms.openai.common_utils import BaseOpenAILLM

    own = httpx.AsyncClient()
    own_sync = httpx.Client()
    monkeypatch.setattr(module, "aclient_session", own)
    monkeypatch.setattr(module, "client_session", own_sync)
    try:
        assert BaseOpenAILLM.get_async_http_client() is own
        assert not isinstance(own._transport, CallBoundedTransport)
        assert BaseOpenAILLM._get_sync_http_client() is own_sync
        assert not isinstance(own_sync._transport, CallBoundedSyncTransport)
    finally:
        await own.aclose()
        own_sync.close()


def test_a_builder_litellm_no_longer_has_is_a_warning_not_silence() -> None:
    class Renamed:
        @staticmethod
        def create_client() -> None:
            return None

    with pytest.warns(RuntimeWarning, match=r"not size-bounded.*Renamed.create_client"):
        _hook(litellm(), Renamed, "create_client", static=False)
    with pytest.warns(RuntimeWarning, match=r"not size-bounded.*Renamed.absent"):
        _hook(litellm(), Renamed, "absent", static=True)


async def test_call_limit_bounds_a_direct_litellm_call_in_its_block() -> None:
    """A library user calling litellm directly gets the default bound, or the one of a
    `call_limit` block."""
    module = litellm()
    reply = as_json(chat(content="x" * (2 * MIB)))
    with RawServer(lambda: reply) as server, call_limit(MIB), pytest.raises(Exception) as info:
        await asyncio.wait_for(
            module.acompletion(
                model=ROUTES["mistral"],
                messages=MESSAGES,
                api_base=server.base_url,
                api_key="sk-test-not-a-key",
                max_retries=0,
            ),
            CALL_DEADLINE,
        )
    own = reply_error(info.value)
    assert own is not None and own.kind == "reply_too_large", info.value
    assert f"larger than the {MIB} bytes allowed" in str(own)


async def test_a_call_with_its_own_tls_setting_reads_within_its_own_limit(route: str) -> None:
    # `ssl_verify` keeps litellm on its own clients (not our pool): the bound is still
    # this call's, not that of an earlier call in the same task.
    extra = {"api_key": "sk-test-not-a-key", "ssl_verify": False}
    with CountingServer(8 * MIB, length=True) as server:
        first = await call(server.base_url, ROUTES[route], max_response_bytes=64 * MIB)
        config = LLMConfig(
            ROUTES[route],
            api_base=server.base_url,
            retry=POLICY,
            extra=extra,
            max_response_bytes=MIB,
        )
        try:
            got: Completion | LLMError = await asyncio.wait_for(
                complete(config, MESSAGES), CALL_DEADLINE
            )
        except LLMError as exc:
            got = exc
        finally:
            await aclose_clients()
    assert not isinstance(first, LLMError) or first.kind != "reply_too_large", first
    assert_too_large(got, MIB)
