"""Run an ASGI app with uvicorn on a background thread (ephemeral port by default).

The socket is bound before the thread starts, so the port is known at once; `start`
returns when uvicorn has finished its startup (lifespan included) and accepts requests.

`server_config` is the one uvicorn configuration of the tool server, here and in `tau tools
serve`: bounded by `ServerLimits`. uvicorn's own settings do part of it (idle keep-alive
connections, the size of a request head); its `limit_concurrency` does not help, as it
answers 503 only once a request's headers are in and so never frees a connection that
sends none. `GuardedH11Protocol` adds the rest: each request must arrive whole within a
deadline, and the number of open connections is capped.
"""

from __future__ import annotations

import asyncio
import math
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol


@dataclass(frozen=True)
class ServerLimits:
    """What one client may hold of the server, unauthenticated or not."""

    max_connections: int = 1000
    """Open connections at most. At the cap a new connection takes the place of the one
    that has waited longest for a request's headers (an idle or dripping one); when every
    connection is busy with a request, the new one is closed at once."""
    request_timeout: float = 30.0
    """Seconds a request may take to arrive whole (headers and body), counted from when
    the server starts waiting for it; then the connection is closed."""
    keep_alive: int = 5
    """Seconds an idle connection is kept between requests (uvicorn's timeout_keep_alive)."""
    max_head_bytes: int = 16 * 1024
    """Largest request line plus headers (uvicorn's h11_max_incomplete_event_size); 400 past it."""

    @property
    def body_timeout(self) -> float:
        """Seconds the app gives a body once its headers are in (`create_app`'s
        `body_timeout`): two thirds of the whole-request deadline, so a client that drips
        one gets the app's clean 408 before the connection is cut."""
        return self.request_timeout * 2 / 3

    def __post_init__(self) -> None:
        for name in ("max_connections", "keep_alive", "max_head_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        timeout = self.request_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise ValueError(f"request_timeout must be a number of seconds, got {timeout!r}")
        if not (math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"request_timeout must be positive and finite, got {timeout!r}")


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a whole-request deadline and a connection cap
    (`limits`, set on a subclass by `server_config`)."""

    limits: ClassVar[ServerLimits] = ServerLimits()

    _deadline: asyncio.TimerHandle | None = None
    _waiting_since: float | None = None  # loop time the wait for a request began

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()
        if len(self.connections) > self.limits.max_connections:
            self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            self._disarm()  # the request is in whole (or the connection is done)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm()  # the next request, if any, gets a deadline of its own

    def _arm(self) -> None:
        self._disarm()
        self._waiting_since = self.loop.time()
        self._deadline = self.loop.call_later(self.limits.request_timeout, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = None
        self._waiting_since = None

    def _expire(self) -> None:
        self._deadline = None
        self._waiting_since = None
        if not self.transport.is_closing():
            self.transport.close()  # a handler still reading the body sees a disconnect

    def _waiting_for_headers(self) -> bool:
        return (
            self._waiting_since is not None
            and self.conn.their_state is h11.IDLE
            and not self.transport.is_closing()
        )

    def _make_room(self) -> None:
        """Over the cap: close the connection that has waited longest for request
        headers, or this one if every other connection is busy with a request."""
        oldest: GuardedH11Protocol | None = None
        for other in self.connections:
            if (
                other is not self
                and isinstance(other, GuardedH11Protocol)
                and other._waiting_for_headers()
                and (oldest is None or other._waiting_since < oldest._waiting_since)  # type: ignore[operator]
            ):
                oldest = other
        (oldest or self)._expire()


def server_config(
    app: Any, *, limits: ServerLimits | None = None, log_level: str = "warning", **kwargs: Any
) -> uvicorn.Config:
    """uvicorn's configuration for `app`, with the tool server's bounds."""
    limits = limits or ServerLimits()
    protocol = type("GuardedH11Protocol", (GuardedH11Protocol,), {"limits": limits})
    return uvicorn.Config(
        app,
        http=protocol,
        log_level=log_level,
        timeout_keep_alive=limits.keep_alive,
        h11_max_incomplete_event_size=limits.max_head_bytes,
        timeout_graceful_shutdown=2,
        **kwargs,
    )


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()


class BackgroundServer:
    """`start()` -> base URL; `stop()` shuts uvicorn down and joins the thread."""

    def __init__(
        self,
        app: Any,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        startup_timeout: float = 30.0,
        log_level: str = "warning",
        limits: ServerLimits | None = None,
    ) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.startup_timeout = startup_timeout
        self.log_level = log_level
        self.limits = limits or ServerLimits()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> str:
        if self._thread is not None:
            return self.url
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.listen(128)
        self.port = sock.getsockname()[1]
        config = server_config(
            self.app,
            limits=self.limits,
            log_level=self.log_level,
            lifespan="on",
            access_log=False,
        )
        server = _Server(config)
        self._server = server

        def run() -> None:
            try:
                asyncio.run(server.serve(sockets=[sock]))
            except BaseException as exc:  # surfaced by start()
                self._error = exc
            finally:
                sock.close()

        self._thread = threading.Thread(target=run, name=f"uvicorn:{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self.startup_timeout
        while not server.ready.wait(0.05):
            if not self._thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                self._thread.join(5)
                raise RuntimeError(f"server on {self.url} failed to start: {self._error!r}")
        if server.should_exit:  # startup failed (e.g. the lifespan raised)
            self.stop()
            raise RuntimeError(f"server on {self.url} failed to start")
        return self.url

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.should_exit = True
        thread.join(10)
        self._server = None
        self._thread = None

    def __enter__(self) -> BackgroundServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
