"""The tool server's ASGI app: sessions + tools over HTTP, the same tools over MCP at /mcp.

POST   /sessions                      {"task_id"?, "split"?} -> 201 {"session_id", ...}
POST   /sessions/{id}/tools/{name}    kwargs -> {"observation": "..."}
GET    /sessions/{id}                 {"data_hash", "tool_calls", ...}
DELETE /sessions/{id}
GET    /openapi.json                  one operation per tool
*      /mcp                           MCP streamable HTTP
GET    /health                        the only route without the bearer token
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from tau_adapters import jsonsafe
from tau_bench.toolserver.mcp_server import build_mcp_server
from tau_bench.toolserver.openapi import build_openapi, tool_functions
from tau_bench.toolserver.sessions import SessionError, SessionNotFound, SessionStore

PUBLIC_PATHS = frozenset({"/health"})


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
) -> FastAPI:
    """The tool server. `server_url` goes into the OpenAPI document's `servers`."""
    if not token:
        raise ValueError("the tool server needs a bearer token")
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

    def _tool_names() -> set[str] | None:
        if store.domain is None:
            return None
        return {fn["name"] for fn in tool_functions(store.domain.tool_schemas)}

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "domain": _domain_name()}

    @app.get("/openapi.json")
    async def openapi(request: Request) -> JSONResponse:
        schemas = store.domain.tool_schemas if store.domain is not None else []
        url = server_url or str(request.base_url).rstrip("/")
        return JSONResponse(build_openapi(schemas, domain=_domain_name(), server_url=url))

    @app.post("/sessions", status_code=201)
    async def create_session(request: Request) -> JSONResponse:
        body = await _json_body(request)
        if isinstance(body, _Invalid):
            return _error(400, body.reason)
        if body is None:
            body = {}
        if not isinstance(body, dict):
            return _error(400, "body must be a JSON object")
        try:
            session = store.create(body.get("task_id"), split=str(body.get("split") or "test"))
        except SessionError as exc:
            return _error(400, str(exc))
        return JSONResponse(
            {
                "session_id": session.id,
                "domain": session.domain.name,
                "task_id": session.task_id,
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
        known = _tool_names() if session.origin != "registered" else None
        if known is None:
            known = {fn["name"] for fn in tool_functions(session.domain.tool_schemas)}
        if name not in known:
            return _error(404, f"unknown tool {name!r}")
        body = await _json_body(request)
        if isinstance(body, _Invalid):
            return _error(400, body.reason)
        kwargs = {} if body is None else body
        try:
            output = store.execute(session_id, name, kwargs)
        except SessionNotFound as exc:
            return _error(404, str(exc))
        return JSONResponse({"observation": output.content, "error": output.is_error})

    if manager is not None:
        app.router.routes.append(Route("/mcp", endpoint=StreamableHTTPASGIApp(manager)))

    app.add_middleware(BearerAuth, token=token)
    return app


class _Invalid:
    def __init__(self, reason: str = "body must be JSON (the tool's arguments)") -> None:
        self.reason = reason


MAX_BODY_BYTES = 1 << 20  # a tool call's arguments are small; a client may not send more


async def _json_body(request: Request) -> Any:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return _Invalid(f"body is larger than {MAX_BODY_BYTES} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return _Invalid(f"body is larger than {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        return None
    try:
        return jsonsafe.loads(raw)
    except jsonsafe.JSONDepthError as exc:
        return _Invalid(f"body is {exc}")
    except ValueError:
        return _Invalid()


def _error(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status)
