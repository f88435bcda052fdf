"""`tau serve`'s app on a real uvicorn on 127.0.0.1 (port 0), in a thread: for the tests of
what only a real server shows (connections, sockets, headers as sent).

`started` waits on uvicorn's own startup (an Event), never on a sleep; the sockets'
timeouts are a safety net only."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tau_bench.service import server as service_server
from tau_bench.service.api import create_app
from tau_bench.service.settings import ServiceSettings
from tests.tau_bench.raw_sockets import SAFETY, is_open, read_until_closed

__all__ = ["SAFETY", "connect", "is_open", "live_server", "read_until_closed"]


@contextmanager
def live_server(settings: ServiceSettings) -> Iterator[tuple[str, int, Any]]:
    """(host, port, app) of a running server; stopped (and its thread joined) on exit."""
    sock = service_server.bind("127.0.0.1", 0)
    app = create_app(settings)
    server = service_server.server_for(app, log_level="warning", graceful=1.0)
    ready = threading.Event()
    startup = server.startup

    async def started(sockets: list[socket.socket] | None = None) -> None:
        await startup(sockets=sockets)
        ready.set()

    server.startup = started  # type: ignore[method-assign]
    thread = threading.Thread(
        target=lambda: asyncio.run(server.serve(sockets=[sock])), name="tau-serve-test"
    )
    thread.start()
    try:
        assert ready.wait(SAFETY), "the server did not start"
        yield "127.0.0.1", sock.getsockname()[1], app
    finally:
        server.should_exit = True
        thread.join(SAFETY)
        sock.close()
        assert not thread.is_alive(), "the server did not stop"


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=SAFETY)
