"""What one client may hold of a server we run (`tau serve`, the tool server), whether it
authenticates or not: connections, the time a request may take to arrive, its head's
size. Plain data, so a command can take the flags without importing uvicorn;
`tau_bench.guarded_h11` enforces them."""

from __future__ import annotations

import math
from dataclasses import dataclass


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
    backlog: int = 128
    """Connections the kernel queues before the server accepts them (listen backlog)."""

    @property
    def body_timeout(self) -> float:
        """Seconds the app gives a body once its headers are in: two thirds of the whole-request deadline, so a client that drips
        one gets the app's clean 408 before the connection is cut."""
        return self.request_timeout * 2 / 3

    def __post_init__(self) -> None:
        for name in ("max_connections", "keep_alive", "max_head_bytes", "backlog"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        timeout = self.request_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise ValueError(f"request_timeout must be a number of seconds, got {timeout!r}")
        if not (math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"request_timeout must be positive and finite, got {timeout!r}")
