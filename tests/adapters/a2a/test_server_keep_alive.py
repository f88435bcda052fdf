"""The reference A2A server keeps an idle connection longer than any client keeps one
for reuse: with uvicorn's 5 s, equal to httpx's, a client could send a request on a
connection the server was closing at that instant (the demo once lost an episode to
the reset: `network error (Network communication error: )`)."""

from __future__ import annotations

import httpx

from adapters.a2a.harness.server import KEEP_ALIVE, _config
from tau_adapters.bounded_http import KEEPALIVE_EXPIRY


async def _app(scope: object, receive: object, send: object) -> None:
    raise AssertionError("not served")


def test_the_server_outlasts_the_clients_idle_connections() -> None:
    config = _config(_app, "warning")
    httpx_default = httpx.AsyncHTTPTransport()._pool._keepalive_expiry
    assert config.timeout_keep_alive == KEEP_ALIVE
    assert httpx_default is not None
    assert config.timeout_keep_alive > max(httpx_default, KEEPALIVE_EXPIRY) + 1
