"""Tool-server sessions: one private episode DB (an `Env`) each, expiring when idle.

Thread-safe: the server runs on its own thread (or process) while the harness registers
and scores sessions from another. Calls on one session are serialised by its lock; calls
on different sessions never share state.

Bounded: the episode environment logs every call with its arguments (that log is what is
scored), so a session takes at most `max_calls` tool calls and `max_argument_bytes` of
arguments (their size as JSON text), and all sessions together at most
`max_total_argument_bytes`; past any of these, a call is refused (`SessionLimitError`)
and not run. Only the tools the session's domain serves can be called (`UnknownToolError`):
`respond` and the like are the harness's, not the agent's.
"""

from __future__ import annotations

import math
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tau_adapters.protocol import ToolOutput
from tau_bench.suites import Domain, EpisodeEnv
from tau_bench.toolserver.openapi import tool_functions


class SessionNotFound(KeyError):
    """No such session, or it expired."""

    def __str__(self) -> str:
        return f"unknown or expired tool session {self.args[0]!r}"


class SessionError(ValueError):
    """A session cannot be created as asked (no domain served, bad task id...)."""


class UnknownToolError(SessionError):
    """The session's domain serves no tool of that name."""

    def __init__(self, name: object) -> None:
        super().__init__(f"unknown tool {_shown(name)}")


class SessionLimitError(SessionError):
    """The session has used up its tool calls or its argument bytes: the call is not run."""


MAX_CALLS_PER_SESSION = 2_000
"""Tool calls one session may make: 100 times the longest v1 ground truth (20 calls), a
bound on its action log."""
MAX_ARGUMENT_BYTES_PER_SESSION = 4 << 20
"""Bytes of tool-call arguments (as JSON text) one session may send in all: the log keeps
them. Four calls of the largest body the server reads (1 MiB), thousands of real ones."""
MAX_ARGUMENT_BYTES_IN_ALL = 512 << 20
"""Bytes of tool-call arguments all open sessions together keep: without it, 10,000
sessions × 4 MiB could hold 40 GiB. Deleting or expiring a session frees its share."""
MAX_TASK_INDEX_DIGITS = 9


def _shown(value: object, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def argument_bytes(value: Any) -> int:
    """The size of `value` as compact JSON text (UTF-8), walked iteratively: safe on any
    depth and on integers too long for `json.dumps`."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item.encode("utf-8", "surrogatepass")) + 2
        elif isinstance(item, dict):
            total += 2 + max(len(item) - 1, 0) + len(item)  # braces, commas, colons
            for key, child in item.items():
                stack.append(key if isinstance(key, str) else str(key))
                stack.append(child)
        elif isinstance(item, list | tuple):
            total += 2 + max(len(item) - 1, 0)
            stack.extend(item)
        elif isinstance(item, bool) or item is None:
            total += 5
        elif isinstance(item, int):
            total += item.bit_length() * 3 // 10 + 2  # decimal digits, sign
        else:
            total += 24  # a float, or whatever else a transport decoded
    return total


def tool_names(tool_schemas: list[dict[str, Any]]) -> frozenset[str]:
    """The names of the tools in OpenAI tool schemas (as served over HTTP and MCP)."""
    return frozenset(fn["name"] for fn in tool_functions(tool_schemas))


@dataclass
class ToolSession:
    id: str
    env: EpisodeEnv
    domain: Domain
    task_id: int | str | None
    origin: str  # "http", "mcp" or "registered"
    last_used: float
    split: str | None = None  # the split `task_id` indexes (None: a registered session)
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: int = 0
    argument_bytes: int = 0
    _tools: frozenset[str] | None = field(default=None, init=False, repr=False)

    @property
    def tools(self) -> frozenset[str]:
        """The names of the tools this session serves (its domain's)."""
        if self._tools is None:
            self._tools = tool_names(self.domain.tool_schemas)
        return self._tools

    def info(self) -> dict[str, Any]:
        with self.lock:
            digest = self.env.data_hash()
            calls, sent = self.calls, self.argument_bytes
        return {
            "session_id": self.id,
            "domain": self.domain.name,
            "task_id": self.task_id,
            "split": self.split,
            "origin": self.origin,
            "tool_calls": calls,
            "argument_bytes": sent,
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
        max_calls: int = MAX_CALLS_PER_SESSION,
        max_argument_bytes: int = MAX_ARGUMENT_BYTES_PER_SESSION,
        max_total_argument_bytes: int = MAX_ARGUMENT_BYTES_IN_ALL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not (isinstance(ttl, int | float) and math.isfinite(ttl) and ttl > 0):
            raise ValueError(f"ttl must be a positive, finite number of seconds, got {ttl!r}")
        self.domain = domain
        self.ttl = ttl
        self.max_sessions = max_sessions
        self.max_calls = max_calls
        self.max_argument_bytes = max_argument_bytes
        self.max_total_argument_bytes = max_total_argument_bytes
        self._total_argument_bytes = 0  # of the sessions in the store; under `_lock`
        self._clock = clock
        self._sessions: dict[str, ToolSession] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    @staticmethod
    def _split(domain: Domain, split: Any) -> str:
        """`split` checked against the domain's splits; None: the domain's default."""
        if split is None:
            return domain.default_split
        if not isinstance(split, str) or not split:
            raise SessionError(f"split must be the name of a task split, got {_shown(split)}")
        try:
            known = tuple(domain.splits)
        except (ValueError, KeyError, OSError):
            known = ()
        if split not in known:
            available = f"available: {', '.join(known)}" if known else "it has none"
            raise SessionError(
                f"unknown task split {_shown(split)} for {domain.name} ({available})"
            )
        return split

    @staticmethod
    def _index(task_id: Any) -> int:
        """A task index: an integer or its ASCII digits (a query string's); 1.5, true,
        "1e3", "²" or a 5,000-digit string are refused, not rounded or converted."""
        index: int | None = None
        if isinstance(task_id, int) and not isinstance(task_id, bool):
            index = task_id
        elif (
            isinstance(task_id, str)
            and 0 < len(task_id) <= MAX_TASK_INDEX_DIGITS
            and task_id.isascii()
            and task_id.isdigit()
        ):
            index = int(task_id)
        if index is None or not 0 <= index < 10**MAX_TASK_INDEX_DIGITS:
            raise SessionError(
                f"task_id must be a task index (an integer from 0), got {_shown(task_id)}"
            )
        return index

    def _task(self, domain: Domain, task_id: Any, split: str) -> Any:
        if task_id is None:
            return None
        index = self._index(task_id)
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
        split: Any = None,
        session_id: str | None = None,
        origin: str = "http",
        domain: Domain | None = None,
    ) -> ToolSession:
        """A new session on a pristine DB of the served domain (for a task, optionally:
        `task_id` indexes `split`, by default the domain's default split, as `tau run`)."""
        domain = domain or self.domain
        if domain is None:
            raise SessionError("this tool server serves registered sessions only")
        split_name = self._split(domain, split)
        task = self._task(domain, task_id, split_name)
        env = domain.new_env(task)
        sid = session_id or secrets.token_urlsafe(16)
        return self._add(
            ToolSession(
                id=sid,
                env=env,
                domain=domain,
                task_id=None if task_id is None else self._index(task_id),
                origin=origin,
                last_used=self._clock(),
                split=split_name,
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
        self, session_id: str, *, task_id: Any = None, split: Any = None, origin: str = "mcp"
    ) -> ToolSession:
        """The session `session_id`, created on first use (MCP sessions key DBs this way)."""
        try:
            return self.get(session_id)
        except SessionNotFound:
            pass
        try:
            return self.create(task_id, split=split, session_id=session_id, origin=origin)
        except SessionError as exc:
            if "exists already" in str(exc):  # created concurrently
                return self.get(session_id)
            raise

    def delete(self, session_id: str) -> bool:
        with self._lock:
            session = self._sessions.pop(session_id, None)
            if session is not None:
                self._total_argument_bytes -= session.argument_bytes
            return session is not None

    def execute(self, session_id: str, name: str, kwargs: Any) -> ToolOutput:
        """Run a tool on the session's DB; the observation. Raises (before running
        anything) `SessionNotFound`, `UnknownToolError` for a tool the session does not
        serve, `SessionLimitError` past the session's calls or argument bytes."""
        session = self.get(session_id)
        if name not in session.tools:
            raise UnknownToolError(name)
        size = argument_bytes(kwargs)
        with session.lock:
            if session.calls >= self.max_calls:
                raise SessionLimitError(
                    f"tool session limit reached: at most {self.max_calls:,} tool calls "
                    "per session (start a new session)"
                )
            if session.argument_bytes + size > self.max_argument_bytes:
                raise SessionLimitError(
                    f"tool session limit reached: at most {self.max_argument_bytes:,} bytes of "
                    f"tool-call arguments per session ({session.argument_bytes:,} sent so far, "
                    f"this call {size:,}; start a new session)"
                )
            with self._lock:
                if self._sessions.get(session.id) is not session:
                    raise SessionNotFound(session_id)  # deleted or expired meanwhile
                if self._total_argument_bytes + size > self.max_total_argument_bytes:
                    raise SessionLimitError(
                        f"tool server limit reached: at most {self.max_total_argument_bytes:,} "
                        "bytes of tool-call arguments kept for all open sessions (delete "
                        "finished sessions)"
                    )
                self._total_argument_bytes += size
                session.argument_bytes += size
            session.calls += 1
            return session.env.execute(name, kwargs)

    def _sweep_locked(self) -> list[str]:
        now = self._clock()
        expired = [sid for sid, s in self._sessions.items() if now - s.last_used > self.ttl]
        for sid in expired:
            self._total_argument_bytes -= self._sessions.pop(sid).argument_bytes
        return expired
