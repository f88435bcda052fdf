"""Run an ASGI app with uvicorn on a background thread (ephemeral port by default).

The socket is bound before the thread starts, so the port is known at once; `start`
returns when uvicorn has finished its startup (lifespan included) and accepts requests.

`server_config` is the one uvicorn configuration of the tool server, here and in `tau tools
serve`: bounded by `ServerLimits` (`tau_bench.guarded_h11`).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from typing import Any

import uvicorn

from tau_bench.guarded_h11 import GuardedServer, fit_to_descriptors, protocol_for
from tau_bench.server_limits import ServerLimits

__all__ = ["BackgroundServer", "ServerLimits", "server_config"]


def server_config(
    app: Any, *, limits: ServerLimits | None = None, log_level: str = "warning", **kwargs: Any
) -> uvicorn.Config:
    """uvicorn's configuration for `app`, with the tool server's bounds (the connection
    cap lowered below the file-descriptor limit when it must be, with a warning)."""
    limits, note = fit_to_descriptors(limits or ServerLimits())
    if note is not None:
        logging.getLogger("tau_bench.server").warning("%s", note)
    return uvicorn.Config(
        app,
        http=protocol_for(limits),
        log_level=log_level,
        timeout_keep_alive=limits.keep_alive,
        h11_max_incomplete_event_size=limits.max_head_bytes,
        timeout_graceful_shutdown=2,
        **kwargs,
    )


class _Server(GuardedServer):
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
