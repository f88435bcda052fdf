"""Hostile bots as real loopback servers: every misbehaviour ends the episode with one
clear, typed error within the configured deadline; nothing raw reaches a terminal."""

from __future__ import annotations

import gzip
import json
import tracemalloc
import urllib.parse
from typing import Any

import pytest

from adapters.http.adapter import HttpProvider
from adapters.http.config_load import load_config
from tau_adapters.loop import EpisodeResult
from tau_adapters.protocol import AdapterError, AdapterTimeoutError
from tau_bench.episode import run_task
from tau_bench.users.scripted import ScriptedUser

from .conftest import TOY_TASK, make_toy_domain
from .hostile import (
    drip,
    endless,
    head,
    hostile_server,
    pieces,
    reply,
    sse_keepalive,
    then_hang,
)

DEADLINE = 1.0


def _provider(url: str, environ: dict[str, str] | None = None, **over: Any) -> HttpProvider:
    cfg: dict[str, Any] = {
        "base_url": url,
        "session": {"mode": "stateless"},
        "message": {"path": "/chat", "body": {"text": "{{ message }}"}},
        "response": {"messages": "reply"},
        "timeout": DEADLINE,
        "retry": {"max_attempts": 2, "backoff_initial": 0.01},
    }
    cfg.update(over)
    return HttpProvider(load_config(cfg, environ=environ or {}))


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


SSE = {"path": "/chat", "stream": "sse", "body": {}}


async def test_an_endless_sse_line_fails_at_the_size_limit_not_at_its_end() -> None:
    # One line, never ended, the connection kept open: the bound is the bytes received,
    # not the lines completed (a line held whole would grow without bound until timeout).
    line = head(content_type="text/event-stream") + b"data: " + b"a" * (1024 * 1024)
    async with hostile_server(then_hang(line)) as url:
        provider = _provider(url, message=SSE, max_response_bytes=64 * 1024)
        result = await _episode(provider)
    assert result.error is not None and result.error.kind == "protocol_error", result.error
    assert "larger than the 65536 bytes allowed (max_response_bytes)" in result.error.message
    assert not result.error.retryable


async def test_an_sse_stream_declaring_a_huge_length_fails_before_reading() -> None:
    first = head(content_type="text/event-stream", Content_Length="999999999") + b"data: x\n\n"
    async with hostile_server(then_hang(first)) as url:
        result = await _episode(_provider(url, message=SSE))
    assert result.error is not None and result.error.kind == "protocol_error", result.error
    assert "max_response_bytes" in result.error.message


async def test_sse_lines_end_at_crlf_lf_or_cr_wherever_the_bytes_are_cut() -> None:
    bot = pieces(
        b'data: {"t": "a"}\r\n\r\n',
        b'data: {"t": "b"}\r\r: a comment\n',
        'data: {"t": "c\u2028d\u00e9"}\n\n'.encode()[:-4],  # cut inside the "\u00e9"
        'data: {"t": "c\u2028d\u00e9"}\n\n'.encode()[-4:],
        b'event: x\ndata: {"t": "e"}\r',  # a CRLF cut between two writes
        b"\n\r\n",
        b'data: {"t": "f"}\n\ndata: [DONE]\n\ndata: {"t": "after done"}\n\n',
    )
    async with hostile_server(bot) as url:
        provider = _provider(
            url, message=SSE, response={"messages": "[].t", "sse": {"wrap": False}}
        )
        result = await _episode(provider)
    assert result.error is None, result.error
    said = [m["content"] for m in result.messages if m["role"] == "assistant"]
    # U+2028 is no line end in an event stream (a JSON string may hold it raw); messages
    # show it escaped
    assert said[0] == "a\nb\nc\\u2028d\u00e9\ne\nf", said


TOKEN = "sekrit/tök/ABC123"  # "/" and a non-ASCII character: both escaped by encoders
ESCAPED = json.dumps(TOKEN).strip('"').replace("/", "\\/")  # sekrit\/t\u00f6k\/ABC123
GO_ESCAPED = json.dumps(TOKEN).strip('"').replace("/", "\\u002F")  # any character, any case
# The token goes in the body (a header cannot carry "ö"); every value read from the
# environment is a secret.
ECHO_CFG = {"message": {"path": "/chat", "body": {"text": "{{ message }}", "key": "${BOT_TOKEN}"}}}


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [
        (
            "500 Internal Server Error",
            f'{{"error": "bad auth Bearer {ESCAPED}"}}',
            "HTTP bot failed",
        ),
        ("400 Bad Request", f'{{"error": "bad auth Bearer {ESCAPED}"}}', "rejected the request"),
        ("200 OK", f"<html>bad auth {GO_ESCAPED}", "is not JSON"),
        ("200 OK", "bad auth " + urllib.parse.quote(TOKEN, safe=""), "is not JSON"),
    ],
)
async def test_a_secret_echoed_escaped_or_encoded_is_masked_in_errors(
    status: str, body: str, said: str
) -> None:
    async with hostile_server(reply(body.encode(), status=status)) as url:
        result = await _episode(_provider(url, environ={"BOT_TOKEN": TOKEN}, **ECHO_CFG))
    assert result.error is not None and said in result.error.message, result.error
    assert "bad auth" in result.error.message and "***" in result.error.message
    for text in (result.error.message, result.error.detail):
        assert "ABC123" not in text and "sekrit" not in text, text


async def test_a_secret_echoed_escaped_inside_a_reply_is_masked_in_messages() -> None:
    inner = json.dumps({"auth": f"Bearer {TOKEN}"}).replace("/", "\\/")  # JSON as text
    body = json.dumps({"reply": f"you sent {inner}"}).encode()
    async with hostile_server(reply(body)) as url:
        result = await _episode(_provider(url, environ={"BOT_TOKEN": TOKEN}, **ECHO_CFG))
    assert result.error is None, result.error
    said = [m["content"] for m in result.messages if m["role"] == "assistant"]
    assert said and all("you sent" in m and "***" in m for m in said), said
    assert "ABC123" not in json.dumps(result.messages)


async def test_a_secret_echoed_escaped_in_an_unparsed_reply_is_masked_in_the_record() -> None:
    body = f"token: {ESCAPED}".encode()
    async with hostile_server(reply(body, content_type="text/plain")) as url:
        provider = _provider(url, environ={"BOT_TOKEN": TOKEN}, **ECHO_CFG)
        spec = provider.config.message.model_copy(update={"stream": "none"})
        exchange = await provider.transport().call(spec, {"message": "hi"})
        await provider.aclose()
    assert exchange.record["response"]["body"] == "token: ***"


# -- a session id the bot chose ---------------------------------------------------------


def _session_bot(session_id: str, seen: list[bytes]) -> Any:
    """Answers the session start (an empty body) with `session_id`, every message with
    a goodbye; records each request body."""

    async def handle(body: bytes, writer: Any) -> None:
        seen.append(body)
        out = {"id": session_id} if body == b"{}" else {"reply": "bye", "end": True}
        data = json.dumps(out).encode()
        writer.write(head(Content_Length=str(len(data))) + data)
        await writer.drain()

    return handle


def _session_provider(url: str, **message: Any) -> HttpProvider:
    return _provider(
        url,
        session={"mode": "server", "start": {"path": "/start", "body": {}}, "id_path": "id"},
        message={"path": "/chat", "body": {"text": "{{ message }}"}, **message},
        response={"messages": "reply", "end": "end"},
    )


@pytest.mark.parametrize("session_id", ["café☃", "abc\r\nX-Injected: 1", "abc\x00", " abc"])
async def test_a_session_id_unusable_in_a_header_is_the_bots_protocol_error(
    session_id: str,
) -> None:
    seen: list[bytes] = []
    async with hostile_server(_session_bot(session_id, seen)) as url:
        provider = _session_provider(url, headers={"X-Session": "{{ bot_session_id }}"})
        result = await _episode(provider)
    error = result.error
    assert error is not None and error.kind == "protocol_error", error
    assert not error.retryable
    assert "session id (at session.id_path) not usable in an HTTP header" in error.message
    assert "'X-Session'" in error.message
    assert not any(c in error.message for c in "\r\n\x00")
    assert seen == [b"{}"]  # only the start: no request was tried with the id


@pytest.mark.parametrize(
    "message",
    [
        {"path": "/chat/{{ bot_session_id }}"},  # in the URL it is percent-encoded
        {"headers": {"X-Session": "{{ bot_session_id | tojson }}"}},  # escaped as JSON
        {"headers": {"X-Session": "{{ session_id }}"}},  # headers without it
    ],
)
async def test_a_session_id_that_no_header_carries_as_is_is_fine(message: dict[str, Any]) -> None:
    seen: list[bytes] = []
    async with hostile_server(_session_bot("abc\r\ncafé☃", seen)) as url:
        result = await _episode(_session_provider(url, **message))
    if "headers" in message and "tojson" in message["headers"]["X-Session"]:
        # `| tojson` escapes the line break but keeps the non-ASCII characters as they are
        assert result.error is not None and result.error.kind == "protocol_error"
        return
    assert result.error is None, result.error
    assert len(seen) == 2


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


def _bomb_then_hang(content_type: str, prefix: bytes) -> Any:
    # 256 MiB of spaces gzip to ~250 KiB: each 64 KiB network read is ~64 MiB decoded.
    body = gzip.compress(prefix + b" " * (256 * 1024 * 1024), compresslevel=9)
    return then_hang(head(content_type=content_type, Content_Encoding="gzip") + body)


@pytest.mark.parametrize(
    ("content_type", "prefix", "message"),
    [
        ("application/json", b'{"reply": "', None),
        ("text/event-stream", b"data: ", {"path": "/chat", "stream": "sse", "body": {}}),
    ],
)
async def test_a_gzip_bomb_stops_at_the_size_limit_without_being_decoded(
    content_type: str, prefix: bytes, message: Any
) -> None:
    """httpx decodes each network chunk whole: a 64 KiB read of a bomb was ~64 MiB in
    memory before it was counted. The bot's client decodes within the bound instead."""
    over = {"message": message} if message else {}
    async with hostile_server(_bomb_then_hang(content_type, prefix)) as url:
        tracemalloc.start()
        try:
            result = await _episode(_provider(url, max_response_bytes=256 * 1024, **over))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert result.error is not None and result.error.kind == "protocol_error", result.error
    assert "larger than the 262144 bytes allowed (max_response_bytes)" in result.error.message
    assert peak < 16 * 1024 * 1024, f"peak {peak / 2**20:.0f} MiB while reading a bomb"
