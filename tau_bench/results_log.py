"""The run's append-only JSONL log (`<run-name>.jsonl`): the source of truth of a run.

A header line (config, task-data hash) then one line per finished episode, appended and
fsynced as episodes finish, so a killed run loses nothing. On resume the same file is
appended to; the last line for a (task, trial) wins.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import math
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from tau_bench import bounded_files
from tau_bench.bounded_files import FileTooLarge, NotRegularFile
from tau_bench.json_decode import loads
from tau_bench.records import EpisodeRecord

LOG_FORMAT = "tau-adapters-run/1"


MAX_LOG_SIZE = 4 * 1024**3
"""Largest results log read (bytes). Its records are held in memory as Python objects,
several times the size of their text: a log of 4 GiB is far beyond any run this machine
could hold, and anything larger (a sparse file) is refused before it is read."""

MAX_LINE_SIZE = 256 * 1024**2
"""Longest log line read (bytes): a record of a very long conversation is a few MB. A
longer line is skipped (counted in `bad_lines`) without being held in memory."""

_CHUNK = 1024**2  # bytes read at a time where a file is read piecewise


class LogFileError(ValueError):
    """A results log that cannot be read or resumed."""


class LogWriteError(OSError):
    """The results log could not be written (a full disk, a file size limit, an I/O
    error). The run stops starting episodes; the lines not written stay queued."""

    def __init__(self, path: Path, cause: OSError, unsaved: int) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause), str(path))
        self.unsaved = unsaved  # finished episodes whose lines are not in the log

    def __str__(self) -> str:
        return f"cannot write {self.filename}: {self.strerror}"


@dataclass
class LogContents:
    """A log read back. `records` are the latest line per (task, trial): what results and
    scores use. `replaced` are the attempts a later line for the same pair replaced (each
    resume re-runs the errored pairs), in log order, with their `SPEND_FIELDS` only: they
    were paid for, so a resumed run's cost counts them, each once, and never the latest."""

    header: dict[str, Any]
    records: dict[tuple[int | str, int], EpisodeRecord]
    bad_lines: int = 0
    replaced: list[EpisodeRecord] = field(default_factory=list)


SPEND_FIELDS = (
    "task_id",
    "trial",
    "reward",
    "error",
    "stop_reason",
    "turns",
    "agent_usage",
    "user_usage",
    "judge_usage",
    "cost",
    "agent_strategy",
    "model",
    "user_strategy",
    "user_model",
    "domain",
)
"""What a replaced attempt keeps: what the cost (`tau_bench.cost`, `metrics.summarize`)
reads, never the trajectory (a log of many failed attempts stays small in memory)."""


def _spend_of(record: EpisodeRecord) -> EpisodeRecord:
    return EpisodeRecord(**{name: getattr(record, name) for name in SPEND_FIELDS})


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


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading, refused (`LogFileError`) unless it is a regular file of
    at most `MAX_LOG_SIZE` bytes (`bounded_files.open_regular`: a FIFO named as a log is
    refused rather than waited on, a device rather than read without end)."""
    try:
        return bounded_files.open_regular(path, MAX_LOG_SIZE)
    except NotRegularFile:
        problem = "is not a regular file (a results log is a <run-name>.jsonl file)"
    except FileTooLarge:
        problem = f"is larger than {MAX_LOG_SIZE // 1024**3} GiB: not a results log tau can read"
    except OSError as exc:
        raise LogFileError(f"cannot read results log {path}: {exc.strerror or exc}") from None
    raise LogFileError(f"{path} {problem}")


def log_lines(fh: BinaryIO) -> Any:
    """The file's lines (without their newline), each at most `MAX_LINE_SIZE` bytes; a
    longer one is read past in chunks and given as `None` (a bad line)."""
    while True:
        line = fh.readline(MAX_LINE_SIZE + 1)
        if not line:
            return
        if len(line) > MAX_LINE_SIZE and not line.endswith(b"\n"):
            while (rest := fh.readline(_CHUNK)) and not rest.endswith(b"\n"):
                pass
            yield None
            continue
        yield line.rstrip(b"\n")


def read_log(path: Path) -> LogContents:
    """Header, latest record per (task, trial) and the attempts they replaced; an
    unreadable line (a run killed mid-write) is skipped and counted. Read line by line from a regular file of at most
    `MAX_LOG_SIZE` bytes (`open_regular`): memory holds the records, not the file."""
    with open_regular(path) as fh:
        try:
            return _parse_log(path, log_lines(fh))
        except OSError as exc:
            raise LogFileError(f"cannot read results log {path}: {exc.strerror or exc}") from None


def _parse_log(path: Path, lines: Any) -> LogContents:
    header: dict[str, Any] | None = None
    records: dict[tuple[int | str, int], EpisodeRecord] = {}
    replaced: list[EpisodeRecord] = []
    bad = 0
    for line in lines:
        if line is None:  # longer than MAX_LINE_SIZE
            bad += 1
            continue
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
            earlier = records.get(record.key)
            if earlier is not None:
                replaced.append(_spend_of(earlier))
            records[record.key] = record
    if header is None or header.get("format") != LOG_FORMAT:
        raise LogFileError(f"{path} is not a tau run results log (no {LOG_FORMAT} header)")
    return LogContents(header=header, records=records, bad_lines=bad, replaced=replaced)


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

    A write that fails (a full disk, a file size limit) is taken back (`_append_lines`),
    its lines go back to the head of the queue and `failure` is set: the runner starts no
    new episode, nothing more is tried until `aclose`, which tries the queue once more and
    then raises `LogWriteError` (saying how many lines are still unwritten).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        # Unbuffered: a write that fails leaves nothing behind in a buffer to be written
        # (half a line) when the file is closed.
        self._fh = path.open("ab", buffering=0)
        _lock_for_writing(self._fh, path)
        self._pending: list[bytes] = []
        self._queue_lock = threading.Lock()  # held for a list operation only
        self._flusher: asyncio.Task[None] | None = None
        self._lock = threading.Lock()  # held while writing: one writer at a time
        self.written = 0
        self.failure: OSError | None = None  # the first write that failed

    @classmethod
    def create(cls, path: Path, header: dict[str, Any]) -> ResultsLog:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("xb") as fh:
            try:
                fh.write(_dumps({"type": "header", "format": LOG_FORMAT, **header}))
                fh.flush()
                os.fsync(fh.fileno())
            except OSError:  # a full disk: no log with half a header is left behind
                path.unlink(missing_ok=True)
                raise
        return cls(path)

    @classmethod
    def reopen(cls, path: Path, note: dict[str, Any]) -> ResultsLog:
        """Reopen for appending (refused while another process writes it), end the last
        line, then note the resume.

        A last line without its newline is kept when it is a whole JSON document (as
        `read_log` counted it: an editor or a copy dropped the newline) and dropped when it
        is not (a run killed mid-write)."""
        log = cls(path)
        try:
            with path.open("r+b") as fh:
                start = last_line_start(fh)
                end = fh.seek(0, os.SEEK_END)
                if start != end:
                    fh.seek(start)
                    tail = fh.read(end - start) if end - start <= MAX_LINE_SIZE else b""
                    if _is_document(tail):
                        fh.write(b"\n")
                    else:
                        fh.truncate(start)
            log._write_now([_dumps({"type": "resume", **note})])
        except BaseException:
            log._fh.close()
            raise
        return log

    def _append_lines(self, data: bytes) -> None:
        """Write `data` at the end of the log and fsync it, or leave the file as it was
        and raise: what a failing write got onto the disk (part of a line, before ENOSPC
        or EFBIG) is cut off again, so the log holds whole lines only and the same lines
        can be written later without a duplicate."""
        fd = self._fh.fileno()
        start = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                if n <= 0:  # pragma: no cover - a regular file writes or raises
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                view = view[n:]
            os.fsync(fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise

    def _write_now(self, lines: list[bytes]) -> None:
        with self._lock:
            self._append_lines(b"".join(lines))

    def _write_pending(self) -> None:
        """Take every queued line and write it (in whichever thread runs this). When the
        write fails the lines go back to the head of the queue and `failure` is set."""
        with self._lock:
            with self._queue_lock:
                batch, self._pending = self._pending, []
            if not batch:
                return
            try:
                self._append_lines(b"".join(batch))
            except OSError as exc:
                with self._queue_lock:
                    self._pending[:0] = batch  # before any line queued meanwhile
                self.failure = self.failure or exc
                return
            self.written += len(batch)

    def append(self, record: EpisodeRecord, line: bytes | None = None) -> None:
        """Queue a record (or its `line`, already encoded by `encode_record`); it is
        written and fsynced promptly in the background (after a failed write, only
        queued: `aclose` tries once more)."""
        encoded = line if line is not None else encode_record(record)
        with self._queue_lock:
            self._pending.append(encoded)
        if self.failure is None and (self._flusher is None or self._flusher.done()):
            self._flusher = asyncio.get_running_loop().create_task(self._flush_loop())

    async def _flush_loop(self) -> None:
        while self._pending and self.failure is None:
            await asyncio.to_thread(self._write_pending)

    @property
    def unsaved(self) -> int:
        """Lines queued and not (yet) on disk."""
        return len(self._pending)

    async def aclose(self) -> None:
        """Wait until everything queued is on disk, then close the file. `LogWriteError`
        when a write failed during the run (the file is closed all the same, and holds
        whole lines only), after one more try at what is still queued."""
        while self._flusher is not None and not self._flusher.done():
            await asyncio.shield(self._flusher)
        if self._flusher is not None and self._flusher.done() and not self._flusher.cancelled():
            exc = self._flusher.exception()
            if exc is not None:
                self._fh.close()
                raise exc
        try:
            self._write_pending()  # after a write still running in a thread, if any
        finally:
            self._fh.close()
        if self.failure is not None:
            raise LogWriteError(self.path, self.failure, self.unsaved)


def last_line_start(fh: BinaryIO) -> int:
    """Where the file's last line starts: just after its last newline (0 when it has
    none). Read backwards a chunk at a time: a log may be gigabytes long."""
    pos = fh.seek(0, os.SEEK_END)
    while pos > 0:
        step = min(_CHUNK, pos)
        fh.seek(pos - step)
        newline = fh.read(step).rfind(b"\n")
        if newline >= 0:
            return pos - step + newline + 1
        pos -= step
    return 0
