"""Hostile bots as real loopback servers: every misbehaviour ends the episode with one
clear, typed error within the configured deadline; nothing raw reaches a terminal."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.http.adapter import HttpProvider
from adapters.http.config_load import load_config
from tau_adapters.loop import EpisodeResult
from tau_adapters.protocol import AdapterError, AdapterTimeoutError
from tau_bench.episode import run_task
from tau_bench.users.scripted import ScriptedUser

from .conftest import TOY_TASK, make_toy_domain
from .hostile import drip, endless, hostile_server, reply, sse_keepalive

DEADLINE = 1.0


def _provider(url: str, **over: Any) -> HttpProvider:
    cfg: dict[str, Any] = {
        "base_url": url,
        "session": {"mode": "stateless"},
        "message": {"path": "/chat", "body": {"text": "{{ message }}"}},
        "response": {"messages": "reply"},
        "timeout": DEADLINE,
        "retry": {"max_attempts": 2, "backoff_initial": 0.01},
    }
    cfg.update(over)
    return HttpProvider(load_config(cfg, environ={}))


async def _episode(provider: HttpProvider) -> EpisodeResult:
    scored = await run_task(make_toy_domain(), TOY_TASK, 0, provider.new_adapter(), ScriptedUser())
    await provider.aclose()
    return scored.result


async def test_a_dripping_bot_is_an_agent_timeout_within_the_deadline() -> None:
    async with hostile_server(drip(every=0.2)) as url:
        result = await _episode(_provider(url))
    assert result.error is not None
    assert result.error.kind == "agent_timeout", result.error
    assert "within 1 s" in result.error.message
    # one attempt, not retried: the episode ends about when the deadline says
    assert result.duration < DEADLINE * 3


async def test_an_sse_stream_of_keepalives_is_an_agent_timeout() -> None:
    async with hostile_server(sse_keepalive(every=0.05)) as url:
        provider = _provider(url, message={"path": "/chat", "stream": "sse", "body": {}})
        result = await _episode(provider)
    assert result.error is not None and result.error.kind == "agent_timeout"
    assert result.duration < DEADLINE * 3


async def test_the_call_deadline_bounds_retries_too() -> None:
    async with hostile_server(reply(b"{}", status="503 Busy")) as url:
        provider = _provider(
            url,
            timeout={"total": 5, "call": DEADLINE},
            retry={"max_attempts": 50, "backoff_initial": 0.3, "backoff_max": 0.3},
        )
        result = await _episode(provider)
    assert result.error is not None and result.error.kind == "agent_timeout"
    assert "timeout.call" in result.error.message


async def test_a_redirect_is_reported_as_a_redirect() -> None:
    async def redirect(body: bytes, writer: Any) -> None:
        writer.write(
            b"HTTP/1.1 302 Found\r\nLocation: https://elsewhere.example/chat\r\n"
            b"Content-Length: 0\r\nConnection: close\r\n\r\n"
        )
        await writer.drain()

    async with hostile_server(redirect) as url:
        result = await _episode(_provider(url))
    assert result.error is not None and result.error.kind == "protocol_error"
    assert "redirect" in result.error.message
    assert "302" in result.error.message and "elsewhere.example" in result.error.message
    assert "no message and no tool call" not in result.error.message


async def test_a_reply_over_the_size_limit_ends_the_episode() -> None:
    async with hostile_server(endless()) as url:
        result = await _episode(_provider(url, max_response_bytes=256 * 1024))
    assert result.error is not None and result.error.kind == "protocol_error"
    assert "larger than the 262144 bytes allowed (max_response_bytes)" in result.error.message


async def test_a_declared_huge_length_fails_before_reading() -> None:
    async def liar(body: bytes, writer: Any) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 999999999\r\n\r\n{")
        await writer.drain()

    async with hostile_server(liar) as url:
        result = await _episode(_provider(url))
    assert result.error is not None and "max_response_bytes" in result.error.message


BINARY = b"\x00\x1b[2J\x1b]0;pwned\x07\xff\xfe\x9b31m binary"


async def test_binary_and_control_bytes_never_come_out_raw() -> None:
    async with hostile_server(reply(BINARY, content_type="application/octet-stream")) as url:
        result = await _episode(_provider(url))
    assert result.error is not None and result.error.kind == "protocol_error"
    message = result.error.message
    assert "is not JSON" in message
    assert not any(c in message for c in ("\x00", "\x1b", "\x07", "\x9b"))
    assert "\\x1b[2J" in message


async def test_control_characters_in_a_bot_message_are_escaped() -> None:
    body = json.dumps({"reply": "hi \x1b[31mred\x07\u202eevil"}).encode()
    async with hostile_server(reply(body)) as url:
        result = await _episode(_provider(url))
    assert result.error is None
    said = [m["content"] for m in result.messages if m["role"] == "assistant"]
    assert said == ["hi \\x1b[31mred\\x07\\u202eevil"]


@pytest.mark.parametrize("depth", [10_000, 150])
async def test_deeply_nested_json_is_a_clean_error(depth: int) -> None:
    deep = b'{"reply": "x", "deep": ' + b"[" * depth + b"]" * depth + b"}"
    async with hostile_server(reply(deep)) as url:
        result = await _episode(_provider(url))
    assert result.error is not None and result.error.kind == "protocol_error"
    assert "nested deeper than 100 levels" in result.error.message
    assert "Recursion" not in result.error.detail


async def test_deeply_nested_sse_event_is_a_clean_error() -> None:
    event = b"data: " + b"[" * 10_000 + b"]" * 10_000 + b"\n\n"
    async with hostile_server(reply(event, content_type="text/event-stream")) as url:
        provider = _provider(url, message={"path": "/chat", "stream": "sse", "body": {}})
        result = await _episode(provider)
    assert result.error is not None and "nested deeper" in result.error.message


async def test_deep_tool_arguments_string_is_a_clean_error() -> None:
    args = "[" * 10_000 + "]" * 10_000
    body = json.dumps({"calls": [{"name": "get_note", "arguments": args}]}).encode()
    async with hostile_server(reply(body)) as url:
        result = await _episode(_provider(url, response={"tool_calls": "calls"}))
    assert result.error is not None and result.error.kind == "protocol_error"
    assert "nested deeper" in result.error.message


# -- pre-flight -----------------------------------------------------------------------


async def test_preflight_uses_the_health_request() -> None:
    seen: list[bytes] = []

    async def health(body: bytes, writer: Any) -> None:
        seen.append(body)
        writer.write(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()

    async with hostile_server(health) as url:
        provider = _provider(url, health={"method": "GET", "path": "/health", "stream": "none"})
        with pytest.raises(AdapterError, match="refused our credentials"):
            await provider.preflight()
        await provider.aclose()
    assert len(seen) == 1


async def test_preflight_starts_one_session_when_there_is_no_health_request() -> None:
    calls: list[bytes] = []

    async def start(body: bytes, writer: Any) -> None:
        calls.append(body)
        out = json.dumps({"id": "bot-1"}).encode()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(out) + out)
        await writer.drain()

    async with hostile_server(start) as url:
        provider = _provider(
            url,
            session={"mode": "server", "start": {"path": "/s"}, "id_path": "id"},
        )
        await provider.preflight()
        await provider.aclose()
    assert len(calls) == 1


async def test_preflight_without_health_or_start_checks_the_connection() -> None:
    async with hostile_server(reply(b"{}")) as url:
        await _provider(url).preflight()
    with pytest.raises(AdapterError, match=r"cannot reach the HTTP bot at 127\.0\.0\.1:"):
        await _provider(url).preflight()  # the server is gone now


async def test_preflight_against_a_dripping_health_endpoint_times_out() -> None:
    async with hostile_server(drip(every=0.2)) as url:
        provider = _provider(url, health={"method": "GET", "path": "/health"})
        with pytest.raises(AdapterTimeoutError):
            await provider.preflight()
        await provider.aclose()
