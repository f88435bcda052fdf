"""Serve a domain's tools to agents that call tools themselves (HTTP/OpenAPI and MCP).

Each session owns a private episode environment; the harness scores the episode on it.
Needs the `http` extra (FastAPI, uvicorn, MCP).
"""

from tau_adapters.extras import require

require("http")

from tau_bench.toolserver.app import create_app  # noqa: E402
from tau_bench.toolserver.background import BackgroundServer  # noqa: E402
from tau_bench.toolserver.sessions import SessionNotFound, SessionStore, ToolSession  # noqa: E402

__all__ = ["BackgroundServer", "SessionNotFound", "SessionStore", "ToolSession", "create_app"]
