"""What one client may hold of `tau serve` at the connection level: a request that never
arrives whole is cut, open connections are capped, a dripping body is a 408, a client
that hangs up mid-body is no error, and failing `accept`s do not flood the log.

Each was open: 20,000 half-sent requests stayed open for good, the server ran out of
file descriptors, `/health` stopped answering and every failed accept logged a
traceback (50 MB of log a minute). Real sockets against a real server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import logging
import select
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from tau_bench import guarded_h11 as connections
from tau_bench.server_limits import ServerLimits
from tau_bench.service.api import create_app

from .conftest import TOKEN, make_settings
from .live import SAFETY, connect, is_open, live_server, read_until_closed

HALF_HEAD = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # the blank line never comes


def test_a_request_that_never_finishes_its_headers_is_cut(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, connections=ServerLimits(request_timeout=0.5))
    with live_server(settings) as (host, port, _), connect(port) as sock:
        sock.sendall(HALF_HEAD)
        assert read_until_closed(sock) == b""  # closed by the server, nothing sent
        assert httpx.get(f"http://{host}:{port}/health").status_code == 200


def test_at_the_connection_cap_the_longest_waiting_connection_makes_room(
    tmp_path: Path,
) -> None:
    limits = ServerLimits(max_connections=4, request_timeout=SAFETY * 2)
    with (
        live_server(make_settings(tmp_path, connections=limits)) as (host, port, _),
        ExitStack() as stack,
    ):
        idle = [stack.enter_context(connect(port)) for _ in range(4)]
        for sock in idle:
            sock.sendall(HALF_HEAD)
        # A fifth connection: one of the four half-sent ones is closed to make room.
        assert httpx.get(f"http://{host}:{port}/health").status_code == 200
        readable, _, _ = select.select(idle, [], [], SAFETY)  # an EOF is readable
        assert readable
        assert sum(not is_open(sock) for sock in idle) == 1


def test_a_body_that_drips_gets_a_408_and_the_connection_closes(tmp_path: Path) -> None:
    # body deadline: two thirds of the request's, so the app answers before the cut
    settings = make_settings(tmp_path, connections=ServerLimits(request_timeout=0.75))
    with live_server(settings) as (_, port, app), connect(port) as sock:
        sock.sendall(
            f"POST /runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{".encode()
        )
        head, _, body = read_until_closed(sock).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408 "), head
        assert json.loads(body) == {
            "detail": "body: not received within 0.5 seconds",
            "field": "body",
        }
        assert app.state.store.runs() == []


async def test_a_client_that_hangs_up_mid_body_is_no_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Was `ERROR: Exception in ASGI application` with a ClientDisconnect traceback."""
    app = create_app(make_settings(tmp_path))
    incoming: list[dict[str, Any]] = [
        {"type": "http.request", "body": b'{"env": ', "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/runs",
        "raw_path": b"/runs",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"authorization", f"Bearer {TOKEN}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", b"100"),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
        "app": app,
    }
    caplog.set_level(logging.WARNING)
    await app(scope, receive, send)  # the old app raised ClientDisconnect here
    assert sent[0]["type"] == "http.response.start"
    assert not [r for r in caplog.records if r.exc_info], caplog.text


def test_failing_accepts_are_one_line_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    loop = asyncio.new_event_loop()
    try:
        connections.quiet_accept_errors(loop)
        caplog.set_level(logging.WARNING)
        context = {
            "message": "socket.accept() out of system resource",
            "exception": OSError(24, "Too many open files"),
            "socket": object(),
        }
        for _ in range(100):
            loop.call_exception_handler(context)
    finally:
        loop.close()
    lines = [r for r in caplog.records if "accept" in r.getMessage()]
    assert len(lines) == 1, caplog.text
    assert lines[0].exc_info is None
    assert lines[0].getMessage() == (
        "cannot accept connections: Too many open files (retrying; logged once a minute)"
    )


def test_the_cap_stays_below_the_file_descriptor_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import resource

    monkeypatch.setattr(resource, "getrlimit", lambda _: (256, 256))
    monkeypatch.setattr(resource, "setrlimit", lambda *_: None)
    limits, note = connections.fit_to_descriptors(ServerLimits(max_connections=1000))
    assert limits.max_connections == 256 - connections.RESERVED_DESCRIPTORS
    assert note == (
        "at most 128 connections (not 1000): the file-descriptor limit is 256 (ulimit -n)"
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_connections", 0), ("request_timeout", float("inf")), ("request_timeout", 0)],
)
def test_connection_limits_are_checked(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        ServerLimits(**{field: value})  # type: ignore[arg-type]
