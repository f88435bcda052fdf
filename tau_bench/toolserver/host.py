"""The run's tool server, for agents that call tools themselves (server-side tools).

A provider that sets `tool_server` (a `ToolServerRequest`) gets one server for the whole
run: the harness starts it before the first episode, serves each episode's environment as
a session for as long as the episode runs, and hands the adapter the session's
`ToolEndpoint`. The episode is scored on that same environment, so what the agent did over
the network is what is scored.
"""

from __future__ import annotations

import secrets
from typing import Any

from tau_adapters.protocol import ToolEndpoint, ToolServerRequest
from tau_bench.suites import Domain, EpisodeEnv
from tau_bench.toolserver.app import create_app
from tau_bench.toolserver.background import BackgroundServer
from tau_bench.toolserver.sessions import SessionStore


class ToolServerHost:
    """One tool server (HTTP/OpenAPI + MCP) behind a fresh bearer token."""

    def __init__(self, request: ToolServerRequest) -> None:
        self.request = request
        self.token = secrets.token_urlsafe(32)
        self.store = SessionStore(None, ttl=request.ttl)
        app = create_app(self.store, self.token, server_url=request.public_url)
        self._server = BackgroundServer(app, request.host, request.port)
        self.base_url = ""

    @classmethod
    def for_provider(cls, provider: Any) -> ToolServerHost | None:
        """A host when the provider asked for one (not started yet), else None."""
        request = getattr(provider, "tool_server", None)
        return cls(request) if isinstance(request, ToolServerRequest) else None

    def start(self) -> str:
        """Bind and start serving (blocking: call it off the event loop); the base URL."""
        url = self._server.start()
        self.base_url = (self.request.public_url or url).rstrip("/")
        return self.base_url

    def open(self, env: EpisodeEnv, domain: Domain, task_id: Any = None) -> ToolEndpoint:
        """Serve `env` as a new session; where the agent reaches it."""
        session = self.store.register(env, domain, task_id=task_id)
        return ToolEndpoint(base_url=self.base_url, session_id=session.id, token=self.token)

    def release(self, endpoint: ToolEndpoint) -> None:
        """Stop serving an episode's environment (the harness keeps and scores it)."""
        self.store.delete(endpoint.session_id)

    def stop(self) -> None:
        self._server.stop()
