"""The tool server's ASGI app: sessions + tools over HTTP, the same tools over MCP at /mcp.

POST   /sessions                      {"task_id"?, "split"?} -> 201 {"session_id", ...}
POST   /sessions/{id}/tools/{name}    kwargs -> {"observation": "..."}
GET    /sessions/{id}                 {"data_hash", "tool_calls", ...}
DELETE /sessions/{id}
GET    /openapi.json                  one operation per tool
*      /mcp                           MCP streamable HTTP
GET    /health                        the only route without the bearer token

Bounds: a body is read only up to `MAX_BODY_BYTES` (tool arguments; an MCP message may be
64 KiB larger), else 400, and must arrive within `body_timeout` seconds of its headers,
else 408 and the connection is closed: a client that drips a body never holds a handler.
Connection-level bounds (headers, idle connections, how many) are
`tau_bench.toolserver.background.ServerLimits`; per-session ones are in `sessions`.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tau_adapters import jsonsafe
from tau_bench.toolserver.mcp_server import build_mcp_server
from tau_bench.toolserver.openapi import build_openapi
from tau_bench.toolserver.sessions import (
    SessionError,
    SessionLimitError,
    SessionNotFound,
    SessionStore,
    UnknownToolError,
)

PUBLIC_PATHS = frozenset({"/health"})

MAX_BODY_BYTES = 1 << 20  # a tool call's arguments are small; a client may not send more
MAX_MCP_BODY_BYTES = MAX_BODY_BYTES + (64 << 10)  # the same arguments in a JSON-RPC envelope
BODY_TIMEOUT = 20.0
"""Seconds a request body may take to arrive once its headers have: below the connection's
whole-request deadline (`ServerLimits.request_timeout`), so the client gets a clean 408."""


def clean_token(token: str | None) -> str:
    """The bearer token as clients will send it: surrounding whitespace (a newline from a
    file or `$(...)`) stripped; `ValueError` for an empty one, or one no HTTP header can
    carry intact (inner whitespace, control or non-ASCII characters), which would make
    every request a 401."""
    cleaned = (token or "").strip()
    if not cleaned:
        raise ValueError("the tool server needs a bearer token (it is empty)")
    if not all("!" <= ch <= "~" for ch in cleaned):
        raise ValueError(
            "the bearer token must be printable ASCII without spaces (clients send it in an "
            "HTTP header)"
        )
    return cleaned


class BearerAuth:
    """Pure ASGI middleware: every path but /health needs `Authorization: Bearer <token>`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        given = b""
        for key, value in scope.get("headers", []):
            if key == b"authorization":
                given = value
                break
        if secrets.compare_digest(given, self._expected):
            await self.app(scope, receive, send)
            return
        response = JSONResponse(
            {"detail": "missing or invalid bearer token"},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
        await response(scope, receive, send)


def create_app(
    store: SessionStore,
    token: str,
    *,
    server_url: str | None = None,
    mcp: bool = True,
    body_timeout: float = BODY_TIMEOUT,
) -> FastAPI:
    """The tool server. `server_url` goes into the OpenAPI document's `servers`."""
    if token != clean_token(token):
        raise ValueError("the bearer token has surrounding whitespace")
    manager: StreamableHTTPSessionManager | None = None
    if mcp:
        manager = StreamableHTTPSessionManager(
            app=build_mcp_server(store), session_idle_timeout=store.ttl
        )

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if manager is None:
            yield
            return
        async with manager.run():
            yield

    app = FastAPI(
        title="τ-bench tool server",
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.store = store

    def _domain_name() -> str:
        return store.domain.name if store.domain is not None else "registered"

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "domain": _domain_name()}

    @app.get("/openapi.json")
    async def openapi(request: Request) -> JSONResponse:
        schemas = store.domain.tool_schemas if store.domain is not None else []
        url = server_url or str(request.base_url).rstrip("/")
        default_split = store.domain.default_split if store.domain is not None else None
        return JSONResponse(
            build_openapi(
                schemas, domain=_domain_name(), server_url=url, default_split=default_split
            )
        )

    @app.post("/sessions", status_code=201)
    async def create_session(request: Request) -> JSONResponse:
        body = await _json_body(request, body_timeout)
        if isinstance(body, _Invalid):
            return body.response()
        if body is None:
            body = {}
        if not isinstance(body, dict):
            return _error(400, "body must be a JSON object")
        try:
            session = store.create(body.get("task_id"), split=body.get("split"))
        except SessionError as exc:
            return _error(400, str(exc))
        return JSONResponse(
            {
                "session_id": session.id,
                "domain": session.domain.name,
                "task_id": session.task_id,
                "split": session.split,
            },
            status_code=201,
        )

    @app.get("/sessions/{session_id}")
    async def get_session(session_id: str) -> JSONResponse:
        try:
            return JSONResponse(store.get(session_id).info())
        except SessionNotFound as exc:
            return _error(404, str(exc))

    @app.delete("/sessions/{session_id}")
    async def delete_session(session_id: str) -> Response:
        if not store.delete(session_id):
            return _error(404, str(SessionNotFound(session_id)))
        return Response(status_code=204)

    @app.post("/sessions/{session_id}/tools/{name}")
    async def call_tool(session_id: str, name: str, request: Request) -> JSONResponse:
        try:
            session = store.get(session_id)
        except SessionNotFound as exc:
            return _error(404, str(exc))
        if name not in session.tools:
            return _error(404, str(UnknownToolError(name)))
        body = await _json_body(request, body_timeout)
        if isinstance(body, _Invalid):
            return body.response()
        kwargs = {} if body is None else body
        try:
            output = store.execute(session_id, name, kwargs)
        except (SessionNotFound, UnknownToolError) as exc:
            return _error(404, str(exc))
        except SessionLimitError as exc:
            return _error(429, str(exc))
        return JSONResponse({"observation": output.content, "error": output.is_error})

    if manager is not None:
        mcp_app = _BoundedBody(StreamableHTTPASGIApp(manager), MAX_MCP_BODY_BYTES, body_timeout)
        app.router.routes.append(Route("/mcp", endpoint=mcp_app))

    app.add_middleware(BearerAuth, token=token)
    return app


class _Invalid:
    def __init__(
        self,
        reason: str = "body must be JSON (the tool's arguments)",
        status: int = 400,
        *,
        close: bool = False,
    ) -> None:
        self.reason = reason
        self.status = status
        self.close = close  # the rest of the body may still be on its way: hang up

    def response(self) -> JSONResponse:
        headers = {"connection": "close"} if self.close else None
        return JSONResponse({"detail": self.reason}, status_code=self.status, headers=headers)


async def _read_body(
    scope: Scope, receive: Receive, limit: int, timeout: float
) -> bytes | _Invalid:
    """The whole request body: at most `limit` bytes, arriving within `timeout` seconds."""
    too_large = _Invalid(f"body is larger than {limit} bytes")
    for key, value in scope.get("headers", []):
        if key == b"content-length" and value.isdigit() and int(value) > limit:
            return too_large
    chunks: list[bytes] = []
    size = 0
    with anyio.move_on_after(timeout) as deadline:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return _Invalid("the client disconnected")  # nobody reads the answer
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return too_large
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
    if deadline.cancelled_caught:
        return _Invalid(f"body not received within {timeout:g} seconds", 408, close=True)
    return b"".join(chunks)


async def _json_body(request: Request, timeout: float = BODY_TIMEOUT) -> Any:
    raw = await _read_body(request.scope, request.receive, MAX_BODY_BYTES, timeout)
    if isinstance(raw, _Invalid):
        return raw
    if not raw.strip():
        return None
    try:
        return jsonsafe.loads(raw)
    except jsonsafe.JSONDepthError as exc:
        return _Invalid(f"body is {exc}")
    except ValueError:
        return _Invalid()


class _BoundedBody:
    """ASGI wrapper (for /mcp, whose SDK reads bodies whole, unbounded and without a
    deadline): the body is read here first, bounded like the HTTP routes', then replayed."""

    def __init__(self, app: ASGIApp, limit: int, timeout: float) -> None:
        self.app = app
        self.limit = limit
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = await _read_body(scope, receive, self.limit, self.timeout)
        if isinstance(body, _Invalid):
            await body.response()(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # a disconnect, for a streamed answer

        await self.app(scope, replay, send)


def _error(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status)
