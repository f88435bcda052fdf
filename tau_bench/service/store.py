"""The table of runs, in SQLite (stdlib `sqlite3`) under the state directory.

Why a database and not just the results files: a run exists before its log does (it
may wait in the queue), it has a status the runner does not know (queued, cancelled),
and a restarted server must find what to resume. The results files stay the source of
truth for episodes; this table holds one row per run: status, the full configuration
(needed to resume it, so the file is private to the user), progress and summary.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

QUEUED = "queued"
RUNNING = "running"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
STATUSES = (QUEUED, RUNNING, COMPLETED, FAILED, CANCELLED)
TERMINAL = frozenset({COMPLETED, FAILED, CANCELLED})

_SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL,
    origin TEXT NOT NULL,
    created TEXT NOT NULL,
    started TEXT,
    finished TEXT,
    run_name TEXT NOT NULL,
    config TEXT NOT NULL,
    log_path TEXT,
    progress TEXT NOT NULL DEFAULT '{}',
    summary TEXT,
    error TEXT,
    note TEXT,
    attempts INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_status ON runs (status, seq);
"""


class StoreError(RuntimeError):
    """The state database cannot be used (wrong schema, unreadable file)."""


class StoreUnavailable(StoreError):
    """A read or write of the state database failed while serving (a full disk, an I/O
    error, a locked file): the server answers 503 and keeps running. The message names
    no server path."""


@contextmanager
def _storage(action: str) -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        raise StoreUnavailable(f"the server's state database cannot be {action}: {exc}") from None


@dataclass
class RunRow:
    """One run as stored. `config` is the full RunConfig dump (secrets included)."""

    id: str
    status: str
    origin: str
    created: str
    run_name: str
    config: dict[str, Any]
    started: str | None = None
    finished: str | None = None
    log_path: str | None = None
    progress: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] | None = None
    error: str | None = None
    note: str | None = None
    attempts: int = 0

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


_COLUMNS = (
    "id, status, origin, created, run_name, config, started, finished, log_path, "
    "progress, summary, error, note, attempts"
)
_JSON_FIELDS = frozenset({"config", "progress", "summary"})
_UPDATABLE = frozenset(
    {
        "status",
        "started",
        "finished",
        "log_path",
        "progress",
        "summary",
        "error",
        "note",
        "attempts",
    }
)


def _row(values: tuple[Any, ...]) -> RunRow:
    (id_, status, origin, created, run_name, config, started, finished, log_path,
     progress, summary, error, note, attempts) = values  # fmt: skip
    return RunRow(
        id=id_,
        status=status,
        origin=origin,
        created=created,
        run_name=run_name,
        config=json.loads(config),
        started=started,
        finished=finished,
        log_path=log_path,
        progress=json.loads(progress or "{}"),
        summary=json.loads(summary) if summary else None,
        error=error,
        note=note,
        attempts=attempts,
    )


class RunStore:
    """Thread-safe access to the runs table; every write is committed at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        new = not path.exists()
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            if new:
                path.chmod(0o600)
            self._db.execute("PRAGMA journal_mode=WAL")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, _SCHEMA_VERSION):
                raise StoreError(
                    f"{path}: state database schema {version} is newer than this server's "
                    f"({_SCHEMA_VERSION})"
                )
            self._db.executescript(_SCHEMA)
            self._db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the state database {path}: {exc}") from None
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def insert(self, row: RunRow) -> None:
        with self._lock, _storage("written"):
            self._db.execute(
                f"INSERT INTO runs ({_COLUMNS}) VALUES ({', '.join('?' * 14)})",
                (
                    row.id,
                    row.status,
                    row.origin,
                    row.created,
                    row.run_name,
                    json.dumps(row.config, default=str),
                    row.started,
                    row.finished,
                    row.log_path,
                    json.dumps(row.progress),
                    json.dumps(row.summary, default=str) if row.summary is not None else None,
                    row.error,
                    row.note,
                    row.attempts,
                ),
            )

    def update(self, run_id: str, **values: Any) -> None:
        """Set columns of one run (JSON columns take Python values)."""
        unknown = set(values) - _UPDATABLE
        if unknown:
            raise ValueError(f"not updatable: {', '.join(sorted(unknown))}")
        params = [
            json.dumps(v, default=str) if k in _JSON_FIELDS and v is not None else v
            for k, v in values.items()
        ]
        assignments = ", ".join(f"{k} = ?" for k in values)
        with self._lock, _storage("written"):
            self._db.execute(f"UPDATE runs SET {assignments} WHERE id = ?", [*params, run_id])

    def get(self, run_id: str) -> RunRow | None:
        with self._lock, _storage("read"):
            found = self._db.execute(
                f"SELECT {_COLUMNS} FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
        return _row(found) if found else None

    def runs(
        self, status: str | None = None, limit: int | None = None, before: str | None = None
    ) -> list[RunRow]:
        """Runs newest first, optionally of one status, optionally only those submitted
        before the run `before` (a page's cursor: the last run of the page before)."""
        query = f"SELECT {_COLUMNS} FROM runs"
        conditions: list[str] = []
        params: list[Any] = []
        if status is not None:
            conditions.append("status = ?")
            params.append(status)
        if before is not None:
            conditions.append("seq < (SELECT seq FROM runs WHERE id = ?)")
            params.append(before)
        if conditions:
            query += " WHERE " + " AND ".join(conditions)
        query += " ORDER BY seq DESC"
        if limit is not None:
            query += " LIMIT ?"
            params.append(limit)
        with self._lock, _storage("read"):
            rows = self._db.execute(query, params).fetchall()
        return [_row(r) for r in rows]

    def count_unfinished(self) -> int:
        """Runs queued or running."""
        with self._lock, _storage("read"):
            (count,) = self._db.execute(
                "SELECT COUNT(*) FROM runs WHERE status IN (?, ?)", (QUEUED, RUNNING)
            ).fetchone()
        return int(count)

    def oldest(self, status: str) -> list[RunRow]:
        """Runs of `status` in submission order (the queue)."""
        with self._lock, _storage("read"):
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM runs WHERE status = ? ORDER BY seq", (status,)
            ).fetchall()
        return [_row(r) for r in rows]


# -- one server per state directory ---------------------------------------------------

_held: dict[Path, int] = {}


def lock_state_dir(state_dir: Path) -> None:
    """Refuse a second server on the same state directory (both would resume the same
    runs). Re-entrant within one process; released by `unlock_state_dir`."""
    key = state_dir.resolve()
    if key in _held:
        return
    import fcntl
    import os

    fd = os.open(key / "server.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise StoreError(f"another tau serve is using the state directory {state_dir}") from None
    _held[key] = fd


def unlock_state_dir(state_dir: Path) -> None:
    import os

    fd = _held.pop(state_dir.resolve(), None)
    if fd is not None:
        os.close(fd)
