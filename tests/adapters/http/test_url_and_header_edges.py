"""Config values a user pastes as they are: a base URL whose port no socket takes, a
header value with a blank at an end, credentials in a URL's userinfo. Each is a load-time
config error or works as HTTP means it; a URL password (and the `Basic` header httpx
makes of it) is a secret wherever a bot echoes it."""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from adapters.http.adapter import HttpProvider
from adapters.http.config import ConfigError
from adapters.http.config_load import load_config
from adapters.http.harness.probe import probe_bot
from tau_adapters.protocol import AdapterError, AdapterProtocolError, SessionContext, UserTurn

from .hostile import hostile_server, reply

MINIMAL: dict[str, Any] = {
    "base_url": "http://bot.test",
    "session": {"mode": "stateless"},
    "message": {"path": "/chat", "body": {"text": "{{ message }}"}},
    "response": {"messages": "reply"},
}
PASSWORD = "pw/9f2c-e41b"
SESSION = SessionContext(session_id="s-1", domain="toy", tools=[])


def _with(**over: Any) -> dict[str, Any]:
    return {**MINIMAL, **over}


def _echo_bot() -> Starlette:
    """Answers with the request headers it got: `/chat` in a reply, `/fail` in a 500."""

    def said(request: Request) -> str:
        h = request.headers
        return f"auth={h.get('authorization')} key=[{h.get('x-api-key')}] said=[{h.get('x-said')}]"

    async def chat(request: Request) -> Response:
        await request.body()
        return JSONResponse({"reply": said(request)})

    async def fail(request: Request) -> Response:
        await request.body()
        return PlainTextResponse(f"boom: {said(request)}", status_code=500)

    return Starlette(
        routes=[Route("/chat", chat, methods=["POST"]), Route("/fail", fail, methods=["POST"])]
    )


@pytest.mark.parametrize(
    ("over", "key"),
    [
        ({"base_url": "http://127.0.0.1:99999"}, "base_url:"),
        ({"base_url": "http://bot.test:http"}, "base_url:"),
        ({"base_url": "http://:8080"}, "base_url:"),
        ({"message": {"path": "http://127.0.0.1:70000/chat"}}, "message.path:"),
    ],
)
def test_a_url_no_socket_can_use_is_a_config_error(over: dict[str, Any], key: str) -> None:
    """Not a traceback (`OverflowError` in an exception group) at the first request."""
    with pytest.raises(ConfigError, match=key) as info:
        load_config(_with(**over), environ={})
    assert "port from 0 to 65535" in str(info.value)


async def test_a_header_value_with_blanks_at_its_ends_is_sent_trimmed(
    serve: Callable[[Any], str],
) -> None:
    """`X-Api-Key: ${KEY} ` and a rendered `{{ message }}` ending in a space: h11 refuses
    such values, so every request used to fail as a config error."""
    cfg = _with(
        base_url=serve(_echo_bot()),
        headers={"X-Api-Key": "${BOT_KEY} ", "X-Said": "{{ message }}"},
    )
    provider = HttpProvider(load_config(cfg, environ={"BOT_KEY": "k-1234567"}))
    adapter = provider.new_adapter()
    await adapter.start(SESSION)
    turn = await adapter.send(UserTurn("hello "))
    await adapter.close()
    await provider.aclose()
    assert "key=[***] said=[hello]" in turn.text  # sent trimmed, and masked so


async def test_a_url_password_is_a_secret_in_every_spelling(
    serve: Callable[[Any], str],
) -> None:
    """`${BOT_URL}` holding `http://user:PASS@host`: the variable is used only in
    `base_url` and is not named like a credential, yet its password is one, and so is the
    `Authorization: Basic ...` httpx sends for it, which a bot may echo."""
    host = serve(_echo_bot()).removeprefix("http://")
    url = f"http://bot-user:{PASSWORD.replace('/', '%2F')}@{host}"
    basic = base64.b64encode(f"bot-user:{PASSWORD}".encode()).decode()
    provider = HttpProvider(load_config(_with(base_url="${BOT_URL}"), environ={"BOT_URL": url}))
    assert {PASSWORD, basic} <= set(provider.secrets)

    adapter = provider.new_adapter()
    await adapter.start(SESSION)
    turn = await adapter.send(UserTurn("hi"))
    assert "auth=Basic *** " in turn.text
    shown = str(turn.raw)
    assert PASSWORD.replace("/", "%2F") not in shown and basic not in shown

    failing = HttpProvider(
        load_config(
            _with(base_url="${BOT_URL}", message={"path": "/fail"}, retry={"max_attempts": 1}),
            environ={"BOT_URL": url},
        )
    )
    adapter = failing.new_adapter()
    await adapter.start(SESSION)
    with pytest.raises(AdapterError) as info:
        await adapter.send(UserTurn("hi"))
    message = str(info.value)
    assert "500" in message and "Basic ***" in message
    assert basic not in message and "%2F9f2c" not in message
    await provider.aclose()
    await failing.aclose()


def test_a_url_password_is_masked_in_load_errors() -> None:
    url = "htp://bot-user:pw-9f2c-e41b@bot.test"
    with pytest.raises(ConfigError) as info:
        load_config(_with(base_url="${BOT_URL}"), environ={"BOT_URL": url})
    assert "pw-9f2c-e41b" not in str(info.value) and "***" in str(info.value)


@pytest.mark.parametrize(
    ("name", "text", "error"),
    [
        (
            "bot.yaml",
            "base_url: http://bot.test\nheaders: {Authorization: Bearer abcdef}\n"
            "message: {path: /chat}\nresponse: {messages: reply}\nheaders: {X-Team: blue}\n",
            "bot.yaml: key 'headers' appears twice in one mapping (line 5)",
        ),
        (
            "bot.json",
            '{"base_url": "http://bot.test", "message": {"path": "/a", "path": "/b"},'
            ' "response": {"messages": "reply"}}',
            "bot.json: key 'path' appears twice in one mapping",
        ),
    ],
)
def test_a_key_written_twice_is_a_config_error(
    tmp_path: Path, name: str, text: str, error: str
) -> None:
    """Not the last one silently winning (a second `headers:` block dropping the
    first's `Authorization`)."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    assert str(info.value).startswith(f"{tmp_path}/{error}")


def test_a_yaml_merge_key_still_overrides(tmp_path: Path) -> None:
    path = tmp_path / "bot.yaml"
    path.write_text(
        "base_url: http://bot.test\nhealth: &h {method: GET, path: /health}\n"
        "message: {<<: *h, method: POST}\nresponse: {messages: reply}\n"
    )
    message = load_config(path, environ={}).config.message
    assert (message.method, message.path) == ("POST", "/health")


async def test_preflight_reports_a_refused_connection_within_its_deadline() -> None:
    """Ten attempts with backoff to 30 s outlast the runner's 30 s pre-flight deadline,
    which then said only "no answer within 30 s": pre-flight tries twice, waits little,
    and names the cause."""
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    cfg = _with(
        base_url=f"http://127.0.0.1:{port}",
        session={"mode": "server", "start": {"path": "/sessions"}, "id_path": "id"},
    )
    provider = HttpProvider(load_config(cfg, environ={}), sleep=sleep)
    with pytest.raises(AdapterError) as info:
        await provider.preflight()
    await provider.aclose()
    assert "after 2 attempts: ConnectError" in str(info.value)
    assert sum(waits) <= 2.0
    assert provider.config.retry.max_attempts == 10  # the episodes keep their policy


@pytest.mark.parametrize("ctype", ["application/json", "application/problem+json; charset=utf-8"])
async def test_a_json_reply_to_an_sse_request_says_so(ctype: str) -> None:
    """It used to be read as an event stream of no events: `payload: []`, no hint that
    the bot answered JSON."""
    body = b'{"reply": "a whole reply"}'
    async with hostile_server(reply(body, content_type=ctype)) as url:
        cfg = _with(
            base_url=url,
            message={"path": "/chat", "body": {"text": "{{ message }}"}, "stream": "sse"},
        )
        provider = HttpProvider(load_config(cfg, environ={}))
        adapter = provider.new_adapter()
        await adapter.start(SESSION)
        with pytest.raises(AdapterProtocolError) as info:
            await adapter.send(UserTurn("hi"))
        await provider.aclose()
    message = str(info.value)
    assert "is JSON" in message and "stream: json" in message and "a whole reply" in message


async def test_the_probe_reports_a_bot_that_is_down_after_two_attempts() -> None:
    """`tau http check --probe` used the episodes' ten attempts: 95 s of backoff before
    saying that the connection was refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cfg = _with(base_url=f"http://127.0.0.1:{port}", retry={"backoff_initial": 0.001})
    with pytest.raises(AdapterError, match="after 2 attempts: ConnectError"):
        await probe_bot(load_config(cfg, environ={}), "hi", "retail")


async def test_the_probe_shows_a_bounded_turn() -> None:
    """A reply of 200,000 messages printed 200,000 lines; a tool call's id was printed as
    the bot sent it (control bytes and all)."""
    many = {
        "reply": ["m"] * 200_000,
        "calls": [{"id": "c\x1b[31m", "name": "x", "arguments": {"q": "y" * 10_000}}] * 30,
    }
    cfg = _with(response={"messages": "reply", "tool_calls": "calls"})
    async with hostile_server(reply(json.dumps(many).encode())) as url:
        lines = await probe_bot(load_config({**cfg, "base_url": url}, environ={}), "hi", "retail")
    assert sum(line.startswith("  message") for line in lines) == 20
    assert "  ... and 199,980 more messages" in lines
    assert "  ... and 10 more tool calls" in lines
    calls = [line for line in lines if line.startswith("  tool call")]
    assert len(calls) == 20 and all(len(line) < 5_000 for line in calls)
    assert "\x1b" not in "".join(lines) and "id=c\\x1b[31m" in calls[0]
