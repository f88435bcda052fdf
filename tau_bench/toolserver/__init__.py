"""Serve a domain's tools to agents that call tools themselves (HTTP/OpenAPI and MCP).

Each session owns a private `tau_bench.env.Env`; the harness scores the episode on it.
"""

from tau_bench.toolserver.app import create_app
from tau_bench.toolserver.background import BackgroundServer
from tau_bench.toolserver.sessions import SessionNotFound, SessionStore, ToolSession

__all__ = ["BackgroundServer", "SessionNotFound", "SessionStore", "ToolSession", "create_app"]
