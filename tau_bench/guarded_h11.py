"""uvicorn's h11 protocol bounded by `ServerLimits`: the part of a server's bounds uvicorn
has no setting for.

uvicorn's own settings do part of it: idle keep-alive connections (`timeout_keep_alive`),
the size of a request head (`h11_max_incomplete_event_size`). Its `limit_concurrency`
does not help: it answers 503 only once a request's headers are in, so a connection that
sends none (or drips them) is never freed. `GuardedH11Protocol` adds the rest: each
request must arrive whole within a deadline, and the number of open connections is
capped. Both `tau serve` and the tool server run on it.

`fit_to_descriptors` keeps the cap below the process's file-descriptor limit, so
`accept` never runs out of descriptors, and `quiet_accept_errors` turns asyncio's
traceback per failed `accept` (one a second while a limit is hit) into one warning line
a minute.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import Any, ClassVar

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from tau_bench.server_limits import ServerLimits

__all__ = [
    "GuardedH11Protocol",
    "GuardedServer",
    "fit_to_descriptors",
    "protocol_for",
    "quiet_accept_errors",
]

log = logging.getLogger("tau_bench.server")


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a whole-request deadline and a connection cap
    (`limits`, set on a subclass by `protocol_for`)."""

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


def protocol_for(limits: ServerLimits) -> type[GuardedH11Protocol]:
    """uvicorn's `http=` protocol class bounded by `limits`."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"limits": limits})


RESERVED_DESCRIPTORS = 128
"""File descriptors kept for everything but client connections: the state database,
results logs, the runs' own HTTP clients (agents, model APIs)."""


def fit_to_descriptors(limits: ServerLimits) -> tuple[ServerLimits, str | None]:
    """`limits` with `max_connections` below the process's file-descriptor limit (raised
    towards its hard limit when needed), and a note when the cap had to be lowered: a
    server that runs out of descriptors can no longer accept `/health`, nor open a log."""
    import dataclasses
    import resource

    needed = limits.max_connections + RESERVED_DESCRIPTORS
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (OSError, ValueError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return limits, None
    cap = max(1, soft - RESERVED_DESCRIPTORS)
    note = (
        f"at most {cap} connections (not {limits.max_connections}): the file-descriptor "
        f"limit is {soft} (ulimit -n)"
    )
    return dataclasses.replace(limits, max_connections=cap), note


ACCEPT_NOTE_EVERY = 60.0  # seconds between two log lines about failing accepts


def quiet_accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    """asyncio logs a traceback each time `accept` fails (out of file descriptors: once
    a second per listening socket, for as long as it lasts). Make that one warning line
    a minute; every other error goes to the loop's previous handler."""
    previous = loop.get_exception_handler()
    last = [-math.inf]

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        message = str(context.get("message", ""))
        if message.startswith("socket.accept() out of system resource"):
            now = time.monotonic()
            if now - last[0] >= ACCEPT_NOTE_EVERY:
                last[0] = now
                exc = context.get("exception")
                log.warning(
                    "cannot accept connections: %s (retrying; logged once a minute)",
                    getattr(exc, "strerror", None) or exc or message,
                )
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


class GuardedServer(uvicorn.Server):
    """uvicorn's server with `quiet_accept_errors` on its loop (run it with a config whose
    `http` is `protocol_for(...)`)."""

    async def startup(self, sockets: list[Any] | None = None) -> None:
        quiet_accept_errors(asyncio.get_running_loop())
        await super().startup(sockets=sockets)
