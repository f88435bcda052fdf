"""The domain tools over MCP (streamable HTTP), one database per session.

Which database a tool call runs on:
1. `?session=<id>` on the MCP URL (or an `X-Tau-Session` header): that tool-server
   session (created by POST /sessions, or registered by the HTTP adapter);
2. otherwise the MCP session (`Mcp-Session-Id`, given by the initialize handshake): a DB
   created on first use (`?task_id=N` picks the task of `?split=`, by default the domain's
   default split as in `tau run`), expiring like any other session;
3. otherwise (a stateless 2026-era request) the call fails with a message saying how to
   bind one. Such a request's `Mcp-Session-Id` is the client's own choice, never checked by
   the SDK, so it names no database: honouring it would let clients pick session ids.

Only the tools the session serves can be called (as over HTTP): `respond` and other names
outside the tool list are refused. A session's bounds (calls, argument bytes) are tool
errors here.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from tau_bench.toolserver.openapi import tool_functions
from tau_bench.toolserver.sessions import (
    SessionError,
    SessionNotFound,
    SessionStore,
    ToolSession,
)

SESSION_HEADER = "x-tau-session"
MCP_SESSION_HEADER = "mcp-session-id"


class NoSession(LookupError):
    pass


def _request_bits(
    ctx: ServerRequestContext[Any],
) -> tuple[str | None, str | None, str | None, str | None]:
    request = ctx.request
    headers = getattr(request, "headers", None)
    query = getattr(request, "query_params", None)
    bound = (query.get("session") if query else None) or (
        headers.get(SESSION_HEADER) if headers else None
    )
    mcp_session = headers.get(MCP_SESSION_HEADER) if headers else None
    if ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
        mcp_session = None  # a stateless request's: chosen by the client, not issued
    task_id = query.get("task_id") if query else None
    split = query.get("split") if query else None
    return bound, mcp_session, task_id, split


def resolve_session(store: SessionStore, ctx: ServerRequestContext[Any]) -> ToolSession:
    bound, mcp_session, task_id, split = _request_bits(ctx)
    if bound:
        return store.get(bound)
    if mcp_session:
        return store.get_or_create(mcp_session, task_id=task_id, split=split, origin="mcp")
    raise NoSession(
        "this MCP connection has no session: add ?session=<tool session id> to the URL, "
        "or connect with the initialize handshake (which issues an Mcp-Session-Id)"
    )


def build_mcp_server(store: SessionStore, *, name: str = "tau-bench-tools") -> Server[Any]:
    """A low-level MCP server whose tools are the (bound session's) domain tools."""

    def schemas_for(ctx: ServerRequestContext[Any]) -> list[dict[str, Any]]:
        try:
            session = resolve_session(store, ctx)
            return session.domain.tool_schemas
        except (NoSession, SessionNotFound, SessionError):
            return store.domain.tool_schemas if store.domain is not None else []

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = [
            types.Tool(
                name=fn["name"],
                description=fn.get("description") or "",
                input_schema=fn.get("parameters") or {"type": "object", "properties": {}},
            )
            for fn in tool_functions(schemas_for(ctx))
        ]
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            session = resolve_session(store, ctx)
        except (NoSession, SessionNotFound, SessionError) as exc:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"Error: {exc}")], is_error=True
            )
        arguments = params.arguments if params.arguments is not None else {}
        try:
            output = store.execute(session.id, params.name, arguments)
        except (SessionNotFound, SessionError) as exc:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"Error: {exc}")], is_error=True
            )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=output.content)],
            is_error=output.is_error,
        )

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)
