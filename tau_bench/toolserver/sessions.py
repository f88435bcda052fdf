"""Tool-server sessions: one private episode DB (an `Env`) each, expiring when idle.

Thread-safe: the server runs on its own thread (or process) while the harness registers
and scores sessions from another. Calls on one session are serialised by its lock; calls
on different sessions never share state.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tau_adapters.protocol import ToolOutput
from tau_bench.suites import Domain, EpisodeEnv


class SessionNotFound(KeyError):
    """No such session, or it expired."""

    def __str__(self) -> str:
        return f"unknown or expired tool session {self.args[0]!r}"


class SessionError(ValueError):
    """A session cannot be created as asked (no domain served, bad task id...)."""


@dataclass
class ToolSession:
    id: str
    env: EpisodeEnv
    domain: Domain
    task_id: int | str | None
    origin: str  # "http", "mcp" or "registered"
    last_used: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: int = 0

    def info(self) -> dict[str, Any]:
        with self.lock:
            digest = self.env.data_hash()
            calls = self.calls
        return {
            "session_id": self.id,
            "domain": self.domain.name,
            "task_id": self.task_id,
            "origin": self.origin,
            "tool_calls": calls,
            "data_hash": digest,
        }


class SessionStore:
    """Sessions by id. `domain` (may be None) is the one `create` serves."""

    def __init__(
        self,
        domain: Domain | None = None,
        *,
        ttl: float = 3600.0,
        max_sessions: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.domain = domain
        self.ttl = ttl
        self.max_sessions = max_sessions
        self._clock = clock
        self._sessions: dict[str, ToolSession] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def _task(self, domain: Domain, task_id: Any, split: str) -> Any:
        if task_id is None:
            return None
        # An index: an integer or its digits; 1.5, true or "1e3" are refused, not rounded.
        if isinstance(task_id, bool) or not (
            isinstance(task_id, int) or (isinstance(task_id, str) and task_id.isdigit())
        ):
            raise SessionError(f"task_id must be an integer, got {task_id!r}")
        index = int(task_id)
        try:
            tasks = domain.tasks(split)
        except (ValueError, KeyError, OSError) as exc:
            raise SessionError(f"no tasks for {domain.name} {split}: {exc}") from None
        if not 0 <= index < len(tasks):
            raise SessionError(f"no task {index} in {domain.name} {split} (0..{len(tasks) - 1})")
        return tasks[index]

    def _add(self, session: ToolSession) -> ToolSession:
        with self._lock:
            self._sweep_locked()
            if len(self._sessions) >= self.max_sessions:
                raise SessionError(f"too many open sessions ({self.max_sessions})")
            if session.id in self._sessions:
                raise SessionError(f"session {session.id!r} exists already")
            self._sessions[session.id] = session
        return session

    def create(
        self,
        task_id: Any = None,
        *,
        split: str = "test",
        session_id: str | None = None,
        origin: str = "http",
        domain: Domain | None = None,
    ) -> ToolSession:
        """A new session on a pristine DB of the served domain (for a task, optionally)."""
        domain = domain or self.domain
        if domain is None:
            raise SessionError("this tool server serves registered sessions only")
        task = self._task(domain, task_id, split)
        env = domain.new_env(task)
        sid = session_id or secrets.token_urlsafe(16)
        return self._add(
            ToolSession(
                id=sid,
                env=env,
                domain=domain,
                task_id=task_id,
                origin=origin,
                last_used=self._clock(),
            )
        )

    def register(
        self,
        env: EpisodeEnv,
        domain: Domain,
        *,
        task_id: Any = None,
        session_id: str | None = None,
    ) -> ToolSession:
        """Serve an existing episode environment (the harness's episode DB) as a session."""
        sid = session_id or secrets.token_urlsafe(16)
        return self._add(
            ToolSession(
                id=sid,
                env=env,
                domain=domain,
                task_id=task_id,
                origin="registered",
                last_used=self._clock(),
            )
        )

    def get(self, session_id: str) -> ToolSession:
        with self._lock:
            self._sweep_locked()
            session = self._sessions.get(session_id)
            if session is None:
                raise SessionNotFound(session_id)
            session.last_used = self._clock()
            return session

    def get_or_create(
        self, session_id: str, *, task_id: Any = None, origin: str = "mcp"
    ) -> ToolSession:
        """The session `session_id`, created on first use (MCP sessions key DBs this way)."""
        try:
            return self.get(session_id)
        except SessionNotFound:
            pass
        try:
            return self.create(task_id, session_id=session_id, origin=origin)
        except SessionError as exc:
            if "exists already" in str(exc):  # created concurrently
                return self.get(session_id)
            raise

    def delete(self, session_id: str) -> bool:
        with self._lock:
            return self._sessions.pop(session_id, None) is not None

    def execute(self, session_id: str, name: str, kwargs: Any) -> ToolOutput:
        """Run a tool on the session's DB; the observation (never an exception)."""
        session = self.get(session_id)
        with session.lock:
            session.calls += 1
            return session.env.execute(name, kwargs)

    def _sweep_locked(self) -> list[str]:
        now = self._clock()
        expired = [sid for sid, s in self._sessions.items() if now - s.last_used > self.ttl]
        for sid in expired:
            del self._sessions[sid]
        return expired
