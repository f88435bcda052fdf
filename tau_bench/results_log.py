"""The run's append-only JSONL log (`<run-name>.jsonl`): the source of truth of a run.

A header line (config, task-data hash) then one line per finished episode, appended and
fsynced as episodes finish, so a killed run loses nothing. On resume the same file is
appended to; the last line for a (task, trial) wins.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from tau_bench.json_decode import loads
from tau_bench.records import EpisodeRecord

LOG_FORMAT = "tau-adapters-run/1"


class LogFileError(ValueError):
    """A results log that cannot be read or resumed."""


@dataclass
class LogContents:
    header: dict[str, Any]
    records: dict[tuple[int | str, int], EpisodeRecord]
    bad_lines: int = 0


_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
_MAX_DEPTH = 200  # of the fallback walk: far beyond any record, far below the stack


def _json_ready(value: Any, depth: int = 0, path: frozenset[int] = frozenset()) -> Any:
    """A copy of `value` that strict JSON can spell: a non-finite float becomes the string
    `"NaN"`, `"Infinity"` or `"-Infinity"` (as JSON-proto and the Dialogflow/CES adapters
    write them), a container that holds itself or nests too deep becomes a short string.
    Anything else is left to the encoder's `default` (`_text_of`)."""
    if isinstance(value, float) and not math.isfinite(value):
        return _NON_FINITE[repr(float(value))]
    if not isinstance(value, dict | list | tuple):
        return value
    if id(value) in path:
        return "<a value that contains itself>"
    if depth >= _MAX_DEPTH:
        return f"<nested deeper than {_MAX_DEPTH} levels>"
    inner = path | {id(value)}
    if isinstance(value, dict):
        return {_json_key(k): _json_ready(v, depth + 1, inner) for k, v in value.items()}
    return [_json_ready(v, depth + 1, inner) for v in value]


def _json_key(key: Any) -> Any:
    """A key strict JSON accepts: str, int, bool and None as they are, others as text."""
    if isinstance(key, str | int | None):
        return key
    if isinstance(key, float) and math.isfinite(key):
        return key
    return _NON_FINITE.get(repr(key)) if isinstance(key, float) else _text_of(key)


def _text_of(value: Any) -> str:
    """`str(value)` for what JSON cannot spell (the encoder's `default`); an object whose
    `__str__` fails is named by its type instead of failing the line."""
    try:
        return str(value)
    except Exception:
        return f"<{type(value).__name__}>"


def _without_lone_surrogates(text: str) -> str:
    """`text` with every lone surrogate (a bot's `"\\ud800"`; UTF-8 has no form for it)
    replaced by U+FFFD; a surrogate pair becomes the character it stands for."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def strict_json(value: Any, **options: Any) -> str:
    """`value` as strict JSON text (`json.dumps` `options`, e.g. `indent`), whatever it
    holds: one plain dump in the common case; a value with NaN, a tuple key or itself
    inside is first made spellable (`_json_ready`). Every file the runner writes goes
    through it, so none holds what its readers refuse."""
    try:
        return json.dumps(value, ensure_ascii=False, default=_text_of, allow_nan=False, **options)
    except (ValueError, TypeError, RecursionError):  # NaN, a tuple key, a value in itself
        return json.dumps(
            _json_ready(value), ensure_ascii=False, default=_text_of, allow_nan=False, **options
        )


def _dumps(obj: dict[str, Any]) -> bytes:
    """One log line as UTF-8 strict JSON, whatever `obj` holds.

    Why: a line the readers refuse (bare NaN: `--resume`, `tau view`, `tau compare`) or
    one that cannot be encoded at all (a lone surrogate from a bot) must never be written,
    nor cost the run. The common case pays for one `json.dumps` and one encode; only a
    record that needs it is walked (`_json_ready`) or re-encoded."""
    text = strict_json(obj)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (_without_lone_surrogates(text) + "\n").encode("utf-8")


def encode_record(record: EpisodeRecord) -> bytes:
    """A record's log line (what `append` writes, and what a Ray worker sends back)."""
    return _dumps(record.to_dict())


def read_log(path: Path) -> LogContents:
    """Header and latest record per (task, trial); an unreadable line (a run killed
    mid-write) is skipped and counted."""
    try:
        lines = path.read_bytes().split(b"\n")
    except OSError as exc:
        raise LogFileError(f"cannot read results log {path}: {exc.strerror}") from None
    header: dict[str, Any] | None = None
    records: dict[tuple[int | str, int], EpisodeRecord] = {}
    bad = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            obj = loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            bad += 1
            continue
        if header is None:
            if not isinstance(obj, dict) or obj.get("type") != "header":
                break
            header = obj
            continue
        if isinstance(obj, dict) and obj.get("type") == "episode":
            try:
                record = EpisodeRecord.from_dict(obj)
            except TypeError:
                bad += 1
                continue
            records[record.key] = record
    if header is None or header.get("format") != LOG_FORMAT:
        raise LogFileError(f"{path} is not a tau run results log (no {LOG_FORMAT} header)")
    return LogContents(header=header, records=records, bad_lines=bad)


def _is_document(line: bytes) -> bool:
    try:
        loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return True


def _lock_for_writing(fh: BinaryIO, path: Path) -> None:
    """An exclusive advisory lock on the log for as long as `fh` is open: two processes
    resuming one log at once would both run its missing episodes (paying twice) and
    interleave their lines. Released by the OS when the process ends, however it ends."""
    if fcntl is None:  # not POSIX: no advisory locks
        return
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise LogFileError(
            f"{path} is being written by another tau run (a run or a resume of it is "
            "still going): wait for it to end, or stop it, then resume"
        ) from None


class ResultsLog:
    """Append-only JSONL with group commit: every line is fsynced before `aclose` returns.

    Episodes finishing together share one fsync (a write+fsync runs in a thread while
    the event loop keeps serving the other episodes). A line leaves the queue only in
    the thread that writes it: Ctrl-C cancels the flusher, and a write it had handed to a
    thread that never started is then done by `aclose` instead of being lost.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = path.open("ab")
        _lock_for_writing(self._fh, path)
        self._pending: list[bytes] = []
        self._queue_lock = threading.Lock()  # held for a list operation only
        self._flusher: asyncio.Task[None] | None = None
        self._lock = threading.Lock()  # held while writing: one writer at a time
        self.written = 0

    @classmethod
    def create(cls, path: Path, header: dict[str, Any]) -> ResultsLog:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("xb") as fh:
            fh.write(_dumps({"type": "header", "format": LOG_FORMAT, **header}))
            fh.flush()
            os.fsync(fh.fileno())
        return cls(path)

    @classmethod
    def reopen(cls, path: Path, note: dict[str, Any]) -> ResultsLog:
        """Reopen for appending (refused while another process writes it), end the last
        line, then note the resume.

        A last line without its newline is kept when it is a whole JSON document (as
        `read_log` counted it: an editor or a copy dropped the newline) and dropped when it
        is not (a run killed mid-write)."""
        log = cls(path)
        with path.open("r+b") as fh:
            data = fh.read()
            end = data.rfind(b"\n") + 1
            if end != len(data):
                if _is_document(data[end:]):
                    fh.write(b"\n")
                else:
                    fh.truncate(end)
        log._write_now([_dumps({"type": "resume", **note})])
        return log

    def _write_now(self, lines: list[bytes]) -> None:
        with self._lock:
            self._fh.write(b"".join(lines))
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def _write_pending(self) -> None:
        """Take every queued line and write it (in whichever thread runs this)."""
        with self._lock:
            with self._queue_lock:
                batch, self._pending = self._pending, []
            if batch:
                self._fh.write(b"".join(batch))
                self._fh.flush()
                os.fsync(self._fh.fileno())
                self.written += len(batch)

    def append(self, record: EpisodeRecord, line: bytes | None = None) -> None:
        """Queue a record (or its `line`, already encoded by `encode_record`); it is
        written and fsynced promptly in the background."""
        encoded = line if line is not None else encode_record(record)
        with self._queue_lock:
            self._pending.append(encoded)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush_loop())

    async def _flush_loop(self) -> None:
        while self._pending:
            await asyncio.to_thread(self._write_pending)

    async def aclose(self) -> None:
        """Wait until everything queued is on disk, then close the file."""
        while self._flusher is not None and not self._flusher.done():
            await asyncio.shield(self._flusher)
        if self._flusher is not None and self._flusher.done() and not self._flusher.cancelled():
            exc = self._flusher.exception()
            if exc is not None:
                raise exc
        self._write_pending()  # after a write still running in a thread, if any
        self._fh.close()
