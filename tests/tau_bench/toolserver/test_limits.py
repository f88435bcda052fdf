"""What one client may hold of the tool server: connections that never finish a request are
cut, bodies that drip get a 408, the connection count is capped, a session's calls and
argument bytes are bounded, and a ttl is finite.

No sleeps: each test waits for the event it expects (the server closing a socket, a
response) with a generous socket timeout as a safety net only."""

from __future__ import annotations

import json
import logging
import math
import select
import socket
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from adapters.http.config import ConfigError
from adapters.http.config_load import load_config
from tau_bench.domains import Domain
from tau_bench.env import Env
from tau_bench.toolserver import BackgroundServer, SessionStore, create_app
from tau_bench.toolserver.sessions import SessionLimitError
from tests.tau_bench.raw_sockets import SAFETY, is_open, read_until_closed

from .conftest import TOY_TASK

TOKEN = "tool-token-limits"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _limits(**kwargs: float) -> Any:
    from tau_bench.toolserver.background import ServerLimits

    return ServerLimits(**kwargs)  # type: ignore[arg-type]


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=SAFETY)
    return sock


HALF_HEAD = b"GET /health HTTP/1.1\r\nHost: x\r\n"  # the blank line never comes


def test_a_request_that_never_finishes_its_headers_is_cut(toy: Domain) -> None:
    limits = _limits(request_timeout=0.5)
    with BackgroundServer(create_app(SessionStore(toy), TOKEN), limits=limits) as server:
        sock = _connect(server.url)
        with sock:
            sock.sendall(HALF_HEAD)
            assert read_until_closed(sock) == b""  # closed by the server, nothing sent
        assert httpx.get(f"{server.url}/health").status_code == 200


def test_a_body_that_drips_gets_a_408_and_the_connection_closes(toy: Domain) -> None:
    store = SessionStore(toy)
    app = create_app(store, TOKEN, body_timeout=0.5)
    limits = _limits(request_timeout=SAFETY * 2)  # the app's deadline answers first
    with BackgroundServer(app, limits=limits) as server:
        sid = httpx.post(f"{server.url}/sessions", headers=AUTH).json()["session_id"]
        for path in (f"/sessions/{sid}/tools/get_note", "/sessions", "/mcp"):
            sock = _connect(server.url)
            with sock:
                sock.sendall(
                    f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                    "Content-Type: application/json\r\n"
                    "Accept: application/json, text/event-stream\r\n"
                    "Content-Length: 100\r\n\r\n{".encode()
                )
                answer = read_until_closed(sock)
            head, _, body = answer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 408 "), (path, answer)
            assert json.loads(body) == {"detail": "body not received within 0.5 seconds"}
    assert store.get(sid).calls == 0


def test_at_the_connection_cap_the_longest_waiting_connection_makes_room(toy: Domain) -> None:
    limits = _limits(max_connections=4, request_timeout=SAFETY * 2)
    with (
        BackgroundServer(create_app(SessionStore(toy), TOKEN), limits=limits) as server,
        ExitStack() as stack,
    ):
        idle = [stack.enter_context(_connect(server.url)) for _ in range(4)]
        for sock in idle:
            sock.sendall(HALF_HEAD)
        # A fifth connection: one of the four half-sent ones is closed to make room.
        assert httpx.get(f"{server.url}/health").status_code == 200
        readable, _, _ = select.select(idle, [], [], SAFETY)  # an EOF is readable
        assert readable
        assert sum(not is_open(sock) for sock in idle) == 1


def test_at_the_cap_with_every_connection_busy_a_new_one_is_refused(toy: Domain) -> None:
    limits = _limits(max_connections=2, request_timeout=SAFETY * 2)
    app = create_app(SessionStore(toy), TOKEN, body_timeout=SAFETY * 2)
    with BackgroundServer(app, limits=limits) as server, ExitStack() as stack:
        busy = [stack.enter_context(_connect(server.url)) for _ in range(2)]
        for sock in busy:  # headers in, body pending: a handler is waiting on each
            sock.sendall(
                f"POST /sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                "Expect: 100-continue\r\nContent-Length: 2\r\n\r\n".encode()
            )
            # "100 Continue" comes once the handler reads the body: it is busy now
            assert sock.recv(65536).startswith(b"HTTP/1.1 100 ")
        refused = stack.enter_context(_connect(server.url))
        assert read_until_closed(refused) == b""  # closed at once, before any request
        for sock in busy:  # the busy ones were left alone: they finish normally
            sock.sendall(b"{}")
            assert sock.recv(65536).startswith(b"HTTP/1.1 201 ")


@pytest.fixture
def bounded(toy: Domain) -> Iterator[tuple[str, SessionStore]]:
    store = SessionStore(toy, max_calls=3, max_argument_bytes=2_000)
    with BackgroundServer(create_app(store, TOKEN)) as server:
        yield server.url, store


def test_a_session_makes_a_bounded_number_of_calls(bounded) -> None:
    url, store = bounded
    with httpx.Client(base_url=url, headers=AUTH) as c:
        sid = c.post("/sessions").json()["session_id"]
        for _ in range(3):
            ok = c.post(f"/sessions/{sid}/tools/get_note", json={"user_id": "u1"})
            assert ok.status_code == 200
        refused = c.post(f"/sessions/{sid}/tools/get_note", json={"user_id": "u1"})
        assert refused.status_code == 429
        assert "at most 3 tool calls per session" in refused.json()["detail"]
        assert c.get(f"/sessions/{sid}").json()["tool_calls"] == 3
    env = store.get(sid).env
    assert isinstance(env, Env) and len(env.actions) == 3  # the refused call was not logged


def test_a_session_keeps_a_bounded_number_of_argument_bytes(bounded) -> None:
    url, store = bounded
    with httpx.Client(base_url=url, headers=AUTH) as c:
        sid = c.post("/sessions").json()["session_id"]
        note = "x" * 1_500
        first = c.post(f"/sessions/{sid}/tools/set_note", json={"user_id": "u1", "note": note})
        assert first.status_code == 200
        again = c.post(f"/sessions/{sid}/tools/set_note", json={"user_id": "u1", "note": note})
        assert again.status_code == 429
        detail = again.json()["detail"]
        assert "at most 2,000 bytes of tool-call arguments per session" in detail
        info = c.get(f"/sessions/{sid}").json()
        assert info["tool_calls"] == 1 and 1_500 < info["argument_bytes"] <= 2_000
    env = store.get(sid).env
    assert isinstance(env, Env) and len(env.actions) == 1


async def test_the_session_bounds_are_tool_errors_over_mcp(bounded, toy: Domain) -> None:
    from .test_toolserver import _mcp, _text

    url, store = bounded
    session = store.register(Env(toy, TOY_TASK), toy, task_id=0)
    async with _mcp(f"{url}/mcp?session={session.id}", token=TOKEN) as client:
        for _ in range(3):
            assert not (await client.call_tool("get_note", {"user_id": "u1"})).is_error
        refused = await client.call_tool("get_note", {"user_id": "u1"})
    assert refused.is_error and "at most 3 tool calls per session" in _text(refused)


@pytest.mark.parametrize("ttl", [math.inf, math.nan, -1.0, 0.0])
def test_a_store_ttl_is_positive_and_finite(toy: Domain, ttl: float) -> None:
    with pytest.raises(ValueError, match="ttl must be a positive, finite number"):
        SessionStore(toy, ttl=ttl)


@pytest.mark.parametrize("ttl", [".inf", ".nan", "1e309"])
def test_server_tools_ttl_in_an_http_config_is_finite(tmp_path, ttl: str) -> None:
    path = tmp_path / "bot.yaml"
    path.write_text(
        "base_url: http://127.0.0.1:9\n"
        f"server_tools: {{enabled: true, ttl: {ttl}}}\n"
        'message: {path: /m, body: {text: "{{ message }}"}}\n'
        "response: {messages: reply}\n"
    )
    with pytest.raises(ConfigError, match=r"server_tools\.ttl: Input should be a finite number"):
        load_config(path)


def test_body_timeouts_leave_no_traceback(toy: Domain, caplog: pytest.LogCaptureFixture) -> None:
    """A client that gives up mid-body is not an error of the server's."""
    caplog.set_level(logging.WARNING)
    app = create_app(SessionStore(toy), TOKEN, body_timeout=SAFETY * 2)
    with BackgroundServer(app, limits=_limits(request_timeout=0.5)) as server:
        sock = _connect(server.url)
        with sock:
            sock.sendall(
                f"POST /sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                "Content-Length: 10\r\n\r\n{".encode()
            )
            assert read_until_closed(sock) == b""  # the whole-request deadline cut it
        assert httpx.get(f"{server.url}/health").status_code == 200
    assert not [r for r in caplog.records if r.exc_info], caplog.text


def test_all_sessions_together_keep_a_bounded_number_of_argument_bytes(toy: Domain) -> None:
    """Per-session bounds alone let 10,000 sessions keep 40 GiB; the store's total is
    bounded too, and a deleted or expired session gives its share back."""
    now = [0.0]
    store = SessionStore(
        toy, ttl=10, max_argument_bytes=2_000, max_total_argument_bytes=3_000, clock=lambda: now[0]
    )
    note = {"user_id": "u1", "note": "x" * 1_200}
    a, b, c = (store.register(Env(toy, TOY_TASK), toy, task_id=0).id for _ in range(3))
    store.execute(a, "set_note", note)
    store.execute(b, "set_note", note)
    with pytest.raises(SessionLimitError, match=r"at most 3,000 bytes .* for all open sessions"):
        store.execute(c, "set_note", note)
    assert store.get(c).calls == 0  # refused, not run
    assert store.delete(a)
    store.execute(c, "set_note", note)  # a's share is free again
    now[0] = 11.0  # b and c expire
    d = store.register(Env(toy, TOY_TASK), toy, task_id=0).id
    store.execute(d, "set_note", note)
    store.execute(d, "set_note", {"user_id": "u1", "note": "y"})
