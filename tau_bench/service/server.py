"""The HTTP server of `tau serve`: uvicorn on a socket bound before anything starts.

Two things plain `uvicorn.run` gets wrong for this service:

* it binds after the app's startup, which has already resumed the state directory's
  runs; a port in use then parks them again and logs several lines. `bind` opens the
  listening socket first, so a bad `--host`/`--port` is one error before anything runs;
* on SIGTERM it waits for open requests, then cancels them (a 500), and only then tells
  the app it is stopping. `ServiceServer` tells the run manager first, so a long poll
  answers with the run as it is and `GET /scores` with its documented 503.

Every connection is bounded (`ServiceSettings.connections`, `tau_bench.guarded_h11`): how many are
open, how long a request may take to arrive, how long an idle one is kept.
"""

from __future__ import annotations

import logging
import socket
from typing import Any

import uvicorn

from tau_bench.guarded_h11 import GuardedServer, fit_to_descriptors, protocol_for
from tau_bench.server_limits import ServerLimits
from tau_bench.service.manager import RunManager

__all__ = ["ServiceServer", "bind", "serve"]

BACKLOG = ServerLimits().backlog  # uvicorn listens again with the configured one


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host`:`port` (`port` 0: any free port). OSError when
    the address cannot be resolved or bound (its message says why)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET  # as uvicorn chooses
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    return sock


class ServiceServer(GuardedServer):
    """uvicorn, telling the run manager it stops before the grace period for open
    requests begins (not after it, when they have been cancelled)."""

    def __init__(self, config: uvicorn.Config, manager: RunManager) -> None:
        super().__init__(config)
        self.manager = manager

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and sockets:
            host, port = sockets[0].getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            logging.getLogger("uvicorn.error").info(
                "Uvicorn running on http://%s:%d (Press CTRL+C to quit)", shown, port
            )

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.manager.stopping()
        await super().shutdown(sockets=sockets)


def server_for(app: Any, log_level: str = "info", graceful: float = 5.0) -> ServiceServer:
    """The server of an app made by `create_app` (its run manager is `app.state.manager`,
    its bounds `app.state.settings.connections`)."""
    limits, note = fit_to_descriptors(app.state.settings.connections)
    if note is not None:
        logging.getLogger("tau_bench.service").warning("%s", note)
    config = uvicorn.Config(
        app,
        http=protocol_for(limits),
        log_level=log_level,
        lifespan="on",
        timeout_graceful_shutdown=int(graceful),
        timeout_keep_alive=limits.keep_alive,
        h11_max_incomplete_event_size=limits.max_head_bytes,
        backlog=limits.backlog,
    )
    return ServiceServer(config, app.state.manager)


def serve(app: Any, sock: socket.socket, log_level: str, graceful: float) -> None:
    """Serve `app` on the bound `sock` until SIGINT/SIGTERM (blocking)."""
    server_for(app, log_level, graceful).run(sockets=[sock])
