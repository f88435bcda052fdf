"""Serve an A2A agent (card + JSON-RPC) with uvicorn on a socket bound up front.

The socket is bound before the app is built, so the card can carry the real URL even
with `--port 0`. `LoopbackServer` runs it on a background thread (tests, `check`);
`serve_forever` runs it in the foreground (`tau a2a serve-agent`).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any, Literal

import uvicorn
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentSkill,
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from adapters.a2a.convention import EXTENSION_URI
from tau_bench.listen import http_url, listening_socket

Auth = Literal["bearer", "api_key"] | None
API_KEY_HEADER = "X-API-Key"
AppFactory = Callable[[str], ASGIApp]


def agent_card(
    url: str,
    *,
    name: str = "tau-bench reference agent",
    streaming: bool = True,
    auth: Auth = None,
    client_tools: bool = True,
) -> AgentCard:
    """A spec-complete card for an agent at `url` (JSON-RPC binding, protocol 1.0)."""
    extensions = []
    if client_tools:
        extensions.append(
            AgentExtension(
                uri=EXTENSION_URI,
                description="Tool calls come back to the client as DataParts; see docs/a2a.md.",
            )
        )
    card = AgentCard(
        name=name,
        description="Customer-service agent for the τ-bench airline and retail domains.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=streaming, extensions=extensions),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[
            AgentSkill(
                id="customer-service",
                name="Customer service",
                description="Helps customers with bookings, orders, returns and exchanges.",
                tags=["tau-bench"],
            )
        ],
    )
    if auth == "bearer":
        card.security_schemes["bearer"].CopyFrom(
            SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))
        )
    elif auth == "api_key":
        card.security_schemes["apiKey"].CopyFrom(
            SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(location="header", name=API_KEY_HEADER)
            )
        )
    for scheme in card.security_schemes:
        card.security_requirements.append(
            SecurityRequirement(schemes={scheme: StringList(list=[])})
        )
    return card


class RequireCredential:
    """ASGI middleware: 401 unless the request carries the secret (the card stays public)."""

    def __init__(self, app: ASGIApp, *, auth: Auth, secret: str) -> None:
        self.app, self.auth, self.secret = app, auth, secret

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == AGENT_CARD_WELL_KNOWN_PATH:
            await self.app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        if self.auth == "bearer":
            given = headers.get("authorization", "").removeprefix("Bearer ")
        else:
            given = headers.get(API_KEY_HEADER.lower(), "")
        if hmac.compare_digest(given.encode(), self.secret.encode()):
            await self.app(scope, receive, send)
            return
        response = JSONResponse({"error": "unauthenticated"}, status_code=401)
        await response(scope, receive, send)


# a2a-sdk 1.3.0 closes a finished task's event queue twice (the consumer on the task's
# final state, then the producer on its way out) and the second close logs this warning:
# once per episode, ~180 identical lines in `make demo`, about nothing that went wrong.
SDK_DOUBLE_CLOSE = "Dispatcher task is not running. Cannot wait for event dispatch."


class _DropDoubleCloseWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != SDK_DOUBLE_CLOSE


def _quiet_double_close() -> None:
    sdk = logging.getLogger("a2a.server.events.event_queue_v2")
    if not any(isinstance(f, _DropDoubleCloseWarning) for f in sdk.filters):
        sdk.addFilter(_DropDoubleCloseWarning())


def a2a_app(
    executor: AgentExecutor, card: AgentCard, *, auth: Auth = None, secret: str | None = None
) -> ASGIApp:
    """Card route + JSON-RPC endpoint at `/`, behind a credential check when `auth` is set."""
    _quiet_double_close()
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )
    app: ASGIApp = Starlette(
        routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/")
    )
    if auth is not None:
        if not secret:
            raise ValueError(f"auth {auth!r} needs a secret")
        app = RequireCredential(app, auth=auth, secret=secret)
    return app


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()


KEEP_ALIVE = 75
"""Seconds the server keeps an idle connection open: more than any client keeps one for
reuse (httpx 5 s, tau's own clients 4 s), so a client never sends a request on a
connection the server is closing at that instant (uvicorn's 5 s equals httpx's)."""


def _config(app: ASGIApp, log_level: str) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        log_level=log_level,
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=1,
        timeout_keep_alive=KEEP_ALIVE,
    )


class LoopbackServer:
    """`start()` -> base URL (real port); `stop()` shuts down and joins, with deadlines."""

    def __init__(self, factory: AppFactory, host: str = "127.0.0.1", port: int = 0) -> None:
        self._factory, self._host, self._port = factory, host, port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def start(self, timeout: float = 20.0) -> str:
        sock = listening_socket(self._host, self._port)
        self.url = http_url(self._host, sock)
        server = _Server(_config(self._factory(self.url), "warning"))
        self._server = server

        def run() -> None:
            try:
                asyncio.run(server.serve(sockets=[sock]))
            finally:
                sock.close()

        self._thread = threading.Thread(target=run, name=f"a2a:{self.url}", daemon=True)
        self._thread.start()
        if not server.ready.wait(timeout):
            self.stop()
            raise RuntimeError(f"A2A server on {self.url} did not start within {timeout:g} s")
        return self.url

    def stop(self, timeout: float = 10.0) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(timeout)

    def __enter__(self) -> LoopbackServer:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def serve_forever(
    factory: AppFactory, host: str, port: int, on_ready: Callable[[str], None]
) -> None:
    """Bind, announce the real URL through `on_ready`, serve until interrupted."""
    sock = listening_socket(host, port)
    url = http_url(host, sock)
    server = _Server(_config(factory(url), "warning"))
    on_ready(url)
    try:
        asyncio.run(server.serve(sockets=[sock]))
    finally:
        sock.close()
