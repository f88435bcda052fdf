"""The HTTP call: rendering, retries (429/503 with Retry-After, connection errors),
401/403 fail fast, error classification, redaction, SSE. Mocked with respx."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest
import respx

from adapters.http.config_load import load_config
from adapters.http.sse import read_events
from adapters.http.transport import HttpTransport
from tau_adapters.protocol import AdapterAuthError, AdapterError, AdapterProtocolError
from tau_adapters.redaction import Redactor

SECRET = "tok-very-secret-42"


def _config(**over: Any) -> Any:
    cfg: dict[str, Any] = {
        "base_url": "http://bot.test/api",
        "headers": {"Authorization": "Bearer ${BOT_TOKEN}", "X-Trace": "{{ session_id }}"},
        "message": {
            "path": "/conv/{{ session_id }}/say",
            "query": {"lang": "en", "skip": "{{ tool_result }}"},
            "body": {"text": "{{ message }}", "n": "{{ trial }}", "key": "${BOT_TOKEN}"},
        },
        "response": {"messages": "reply"},
        "retry": {"max_attempts": 3, "backoff_initial": 0.25, "backoff_max": 1.0},
    }
    cfg.update(over)
    return load_config(cfg, environ={"BOT_TOKEN": SECRET})


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


VARS = {"session_id": "s 1/2", "message": "hello", "trial": 3, "tool_result": None}


async def _transport(loaded: Any, sleeps: Sleeps) -> tuple[HttpTransport, httpx.AsyncClient]:
    client = httpx.AsyncClient()
    redactor = Redactor(loaded.secrets)
    return HttpTransport(client, loaded.config, redactor, sleep=sleeps), client


@pytest.fixture
async def setup() -> AsyncIterator[tuple[HttpTransport, Sleeps]]:
    sleeps = Sleeps()
    loaded = _config()
    transport, client = await _transport(loaded, sleeps)
    yield transport, sleeps
    await client.aclose()


URL = "http://bot.test/api/conv/s%201%2F2/say"


@respx.mock
async def test_request_is_rendered_and_recorded_redacted(setup) -> None:
    transport, _ = setup
    route = respx.post(URL).respond(200, json={"reply": "hi", "echo": SECRET})
    ex = await transport.call(transport.config.message, {**VARS, "session_id": "s 1/2"})
    request = route.calls.last.request
    assert request.url.params["lang"] == "en" and "skip" not in request.url.params
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.headers["x-trace"] == "s 1/2"
    assert json.loads(request.content) == {"text": "hello", "n": 3, "key": SECRET}
    assert ex.document == {"reply": "hi", "echo": SECRET}  # the mapping sees the real reply
    assert ex.status == 200 and ex.attempts == 1 and ex.latency > 0
    rec = json.dumps(ex.record)
    assert SECRET not in rec
    assert ex.record["request"]["headers"]["Authorization"] == "***"
    assert ex.record["request"]["body"] == {"text": "hello", "n": 3, "key": "***"}
    assert ex.record["response"]["body"]["echo"] == "***"


@respx.mock
async def test_429_honours_retry_after_seconds(setup) -> None:
    transport, sleeps = setup
    route = respx.post(URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "7"}),
            httpx.Response(200, json={"reply": "ok"}),
        ]
    )
    ex = await transport.call(transport.config.message, VARS)
    assert route.call_count == 2 and ex.attempts == 2
    assert sleeps.delays == [7.0]


@respx.mock
async def test_503_http_date_retry_after_and_backoff(setup) -> None:
    transport, sleeps = setup
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    respx.post(URL).mock(
        side_effect=[
            httpx.Response(503, headers={"Retry-After": when}),
            httpx.Response(503),
            httpx.Response(200, json={"reply": "ok"}),
        ]
    )
    await transport.call(transport.config.message, VARS)
    assert 25 <= sleeps.delays[0] <= 30
    assert 0.25 <= sleeps.delays[1] <= 0.5  # exponential backoff (attempt 2), jittered


@respx.mock
async def test_retry_after_is_capped() -> None:
    sleeps = Sleeps()
    transport, client = await _transport(_config(retry={"retry_after_max": 5}), sleeps)
    respx.post(URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "3600"}),
            httpx.Response(200, json={"reply": "x"}),
        ]
    )
    await transport.call(transport.config.message, VARS)
    assert sleeps.delays == [5.0]
    await client.aclose()


@respx.mock
async def test_persistent_429_gives_up_retryable(setup) -> None:
    transport, sleeps = setup
    route = respx.post(URL).respond(429, headers={"Retry-After": "1"})
    with pytest.raises(AdapterError, match=r"answered 429 .* 3 times") as info:
        await transport.call(transport.config.message, VARS)
    assert info.value.retryable and route.call_count == 3 and sleeps.delays == [1.0, 1.0]


@respx.mock
async def test_connection_errors_are_retried_a_bounded_number_of_times(setup) -> None:
    transport, sleeps = setup
    route = respx.post(URL).mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(AdapterError, match=r"cannot reach the HTTP bot .* after 3 attempts"):
        await transport.call(transport.config.message, VARS)
    assert route.call_count == 3 and len(sleeps.delays) == 2


@respx.mock
async def test_timeout_then_success(setup) -> None:
    transport, _ = setup
    respx.post(URL).mock(
        side_effect=[httpx.ReadTimeout("slow"), httpx.Response(200, json={"reply": "ok"})]
    )
    ex = await transport.call(transport.config.message, VARS)
    assert ex.attempts == 2


@respx.mock
async def test_timeouts_exhausted(setup) -> None:
    transport, _ = setup
    respx.post(URL).mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(AdapterError, match="timed out \\(ReadTimeout\\)"):
        await transport.call(transport.config.message, VARS)


@pytest.mark.parametrize("status", [401, 403])
@respx.mock
async def test_auth_errors_fail_fast(setup, status: int) -> None:
    transport, sleeps = setup
    route = respx.post(URL).respond(status, json={"error": "bad token " + SECRET})
    with pytest.raises(AdapterAuthError, match=f"refused our credentials: {status}") as info:
        await transport.call(transport.config.message, VARS)
    assert route.call_count == 1 and sleeps.delays == []
    assert SECRET not in str(info.value) and not info.value.retryable
    assert info.value.kind == "auth_error"


@respx.mock
async def test_client_error_quotes_truncated_body(setup) -> None:
    transport, _ = setup
    respx.post(URL).respond(422, text="x" * 2000)
    with pytest.raises(AdapterProtocolError, match="rejected the request: 422") as info:
        await transport.call(transport.config.message, VARS)
    assert "more chars]" in str(info.value) and len(str(info.value)) < 800


@respx.mock
async def test_server_error_is_retryable_adapter_error(setup) -> None:
    transport, _ = setup
    respx.post(URL).respond(500, text="boom")
    with pytest.raises(AdapterError, match=r"failed: 500 .*boom") as info:
        await transport.call(transport.config.message, VARS)
    assert info.value.retryable and not isinstance(info.value, AdapterProtocolError)


@respx.mock
async def test_non_json_reply_is_a_protocol_error(setup) -> None:
    transport, _ = setup
    respx.post(URL).respond(200, text="<html>oops</html>")
    with pytest.raises(AdapterProtocolError, match="is not JSON: <html>oops</html>"):
        await transport.call(transport.config.message, VARS)


@respx.mock
async def test_json_with_a_number_python_will_not_read_says_so(setup) -> None:
    transport, _ = setup
    respx.post(URL).respond(200, text='{"reply": ' + "7" * 5000 + "}")
    with pytest.raises(AdapterProtocolError, match="holds a number of more than 4,300 digits"):
        await transport.call(transport.config.message, VARS)


@respx.mock
async def test_sse_reply_becomes_an_event_list() -> None:
    sleeps = Sleeps()
    loaded = _config(
        message={"path": "/s", "stream": "sse", "body": {"m": "{{ message }}"}},
        response={"messages": "[].t", "sse": {"wrap": False}},
    )
    transport, client = await _transport(loaded, sleeps)
    body = (
        ": comment\n\n"
        'data: {"t": "a"}\n\n'
        "event: x\ndata: plain\ndata: text\n\n"
        'data: {"t": "b"}\n\n'
        "data: [DONE]\n\n"
        'data: {"t": "after done"}\n\n'
    )
    route = respx.post("http://bot.test/api/s").respond(
        200, content=body.encode(), headers={"content-type": "text/event-stream"}
    )
    ex = await transport.call(loaded.config.message, VARS)
    assert route.calls.last.request.headers["accept"] == "text/event-stream"
    assert ex.document == [{"t": "a"}, "plain\ntext", {"t": "b"}]
    await client.aclose()


async def test_sse_parser_wraps_events() -> None:
    async def lines() -> AsyncIterator[str]:
        for line in ["id: 1", "event: delta", 'data: {"a": 1}', "", "data: tail"]:
            yield line

    events = await read_events(lines(), done=None)
    assert [(e.event, e.id, e.parsed()) for e in events] == [
        ("delta", "1", {"a": 1}),
        ("message", "1", "tail"),
    ]
