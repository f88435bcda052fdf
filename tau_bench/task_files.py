"""Reading a tasks file into its raw records, whatever the suite.

Every suite accepts the same three layouts, so a file written by `tau sdg generate` (JSON
lines, one task per line, appended as tasks are made) and an upstream `tasks.json` (a JSON
array; τ³ also `{"tasks": [...]}`) load alike. Each suite validates the records itself.
A file that is not JSON (nested too deep, an integer longer than Python converts
included), larger than a data file may be (`MAX_FILE_SIZE`), or with two tasks of one id
is one `TaskFileError` naming it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tau_bench.data.files import MAX_FILE_SIZE, FileTooLarge, read_capped
from tau_bench.errors import TaskFileError
from tau_bench.json_decode import stdlib_loads

__all__ = ["TaskFileError", "read_task_records", "validation_summary"]


def read_task_records(path: Path) -> list[Any]:
    """The file's records: a JSON array, `{"tasks": [...]}`, or JSON lines."""
    try:
        text = _read_bytes(Path(path)).decode("utf-8")
    except OSError as exc:
        raise TaskFileError(f"cannot read tasks file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise TaskFileError(f"{path}: not a text file (UTF-8)") from None
    except MemoryError:  # under the cap, but more than this process may hold
        raise TaskFileError(f"{path}: too large to read into memory") from None
    if text.lstrip().startswith("["):
        raw = _loads(path, text)
    else:
        try:
            raw = _unwrap(stdlib_loads(text))  # one JSON document: a task, or wrapped tasks
        except json.JSONDecodeError as whole:
            raw = _lines(path, text, whole)
        except RecursionError:
            raise _too_deep(path) from None
    if not isinstance(raw, list):
        raise TaskFileError(f"{path}: expected a JSON array of tasks")
    _check_unique_ids(path, raw)
    return raw


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, refused past `MAX_FILE_SIZE` (the data files' cap, far above any
    real tasks file; `read_capped`)."""
    try:
        return read_capped(path)
    except FileTooLarge:
        raise _too_large(path) from None


def _too_large(path: Path) -> TaskFileError:
    mib = MAX_FILE_SIZE // (1024 * 1024)
    return TaskFileError(f"{path}: too large for a tasks file (more than {mib} MiB)")


def _check_unique_ids(path: Path, records: list[Any]) -> None:
    """A task id twice would run (and count) one task twice under one name, and no
    results file can hold both; the data directory's loader refuses it as damage too.
    Tasks without a string `id` (v1 tasks: their index is their id) are not compared."""
    seen: dict[str, int] = {}
    for i, record in enumerate(records):
        ident = record.get("id") if isinstance(record, dict) else None
        if not isinstance(ident, str):
            continue
        if ident in seen:
            raise TaskFileError(f"{path}: tasks {seen[ident]} and {i} have the same id {ident!r}")
        seen[ident] = i


def _unwrap(value: Any) -> Any:
    """`{"tasks": [...]}` -> the list; a single task -> a list of it."""
    if isinstance(value, dict) and isinstance(value.get("tasks"), list):
        return value["tasks"]
    return [value]


def _lines(path: Path, text: str, whole: json.JSONDecodeError) -> list[Any]:
    """JSON lines; a first line that is not JSON means one broken multi-line document."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(stdlib_loads(line))
        except RecursionError:
            raise _too_deep(path, number) from None
        except json.JSONDecodeError as exc:
            error = whole if not out else exc
            where = error.lineno if not out else number
            raise TaskFileError(f"{path}: not valid JSON ({error.msg} at line {where})") from None
    return out


def _loads(path: Path, text: str) -> Any:
    try:
        return stdlib_loads(text)
    except json.JSONDecodeError as exc:
        raise TaskFileError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise _too_deep(path) from None


def _too_deep(path: Path, line: int | None = None) -> TaskFileError:
    """Python's decoder gives up (RecursionError) on JSON nested ~1,000 levels deep."""
    where = f" at line {line}" if line is not None else ""
    return TaskFileError(f"{path}: not valid JSON (nested too deep{where})")


def validation_summary(exc: Any) -> str:
    """A pydantic `ValidationError`'s first error on one line: `field.path: message`
    (just the message when the record itself is wrong, e.g. not an object)."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {first['msg']}" if where else str(first["msg"])
