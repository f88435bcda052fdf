"""Reading a data directory's files: whatever is wrong with one is a `DataDirError`.

A file that is missing or unreadable, larger than `MAX_FILE_SIZE`, not UTF-8, not valid
JSON or TOML, nested deeper than the decoder can follow (or with an integer longer than
it converts), or of the wrong shape is one line naming the file and what to do (`hint`),
never a traceback (nor a `MemoryError`). Every suite's loaders read through these (v1:
`tau_bench.domains`; τ³: `tau_bench.tau3`); what a valid file decodes to is exactly what
`json.loads` / `tomllib.loads` / `read_text` give.
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path
from typing import Any

from tau_bench import bounded_files
from tau_bench.bounded_files import FileTooLarge
from tau_bench.data.errors import DataDirError

__all__ = [
    "MAX_FILE_SIZE",
    "PULL_HINT",
    "FileTooLarge",
    "damaged",
    "read_capped",
    "read_json",
    "read_text",
    "read_toml",
    "read_tool_schemas",
]

MAX_FILE_SIZE = 256 * 1024 * 1024
"""Largest data file read (bytes). The largest real one is τ³ telecom's `tasks.json`
(14 MB), so 256 MiB is ~18 times that: anything larger is not a data file (a sparse or
endless file, a device) and is refused before it is read, not decoded into memory."""

PULL_HINT = "restore it or run `tau data pull`"
"""What to do about a damaged v1 data directory (τ³ has its own: `tau_bench.tau3.data`)."""


def damaged(path: Path, problem: str, hint: str = PULL_HINT) -> DataDirError:
    """The error for a data file that was read but is not what it should be."""
    return DataDirError(f"{path} {problem}: the data directory is damaged; {hint}")


def read_capped(path: Path) -> bytes:
    """The file's bytes, at most `MAX_FILE_SIZE` (`bounded_files.read_capped`: a device
    or a pipe is read until that much has arrived). The one bounded reader of data files,
    task files and τ² results files."""
    return bounded_files.read_capped(path, MAX_FILE_SIZE)


def _read_bytes(path: Path, hint: str) -> bytes:
    """The file's bytes (`read_capped`); a file too large is damage."""
    try:
        return read_capped(path)
    except FileTooLarge:
        raise _too_large(path, hint) from None
    except OSError as exc:
        raise DataDirError(f"cannot read {path}: {exc.strerror or exc}; {hint}") from None


def _too_large(path: Path, hint: str) -> DataDirError:
    mib = 1024 * 1024
    cap = f"{MAX_FILE_SIZE // mib} MiB" if mib <= MAX_FILE_SIZE else f"{MAX_FILE_SIZE:,} bytes"
    return damaged(path, f"(more than {cap}) is too large", hint)


def read_text(path: Path, hint: str = PULL_HINT) -> str:
    """The file's text (UTF-8), as `path.read_text(encoding="utf-8")`."""
    data = _read_bytes(path, hint)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise damaged(path, f"is not UTF-8 text (byte {exc.start})", hint) from None


def read_json(path: Path, hint: str = PULL_HINT) -> Any:
    """The file's JSON, as `json.load` of the file opened in binary mode."""
    data = _read_bytes(path, hint)
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, absurd depth
        raise damaged(path, f"is not valid JSON ({_reason(exc)})", hint) from None
    except MemoryError:
        raise damaged(path, "is too large to decode", hint) from None


def read_tool_schemas(path: Path, hint: str = PULL_HINT) -> list[dict[str, Any]]:
    """A `tools.json` / `user_tools.json`: a JSON array of OpenAI function schemas, each
    with a name (what the agent or user is given), for v1 and τ³ alike."""
    schemas = read_json(path, hint)
    if not isinstance(schemas, list):
        raise damaged(path, "is not a JSON array of tool schemas", hint)
    for i, schema in enumerate(schemas):
        function = schema.get("function") if isinstance(schema, dict) else None
        if not (
            isinstance(function, dict)
            and isinstance(function.get("name"), str)
            and isinstance(function.get("parameters", {}), dict)
        ):
            raise damaged(path, f"entry {i} is not a function schema with a name", hint)
    return schemas


def read_toml(path: Path, hint: str = PULL_HINT) -> Any:
    """The file's TOML, as `tomllib.loads(path.read_text(encoding="utf-8"))`."""
    text = read_text(path, hint)
    try:
        return tomllib.loads(text)
    except (ValueError, RecursionError) as exc:  # TOMLDecodeError, absurd depth
        raise damaged(path, f"is not valid TOML ({_reason(exc)})", hint) from None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deep"
    if not isinstance(exc, json.JSONDecodeError | UnicodeDecodeError | tomllib.TOMLDecodeError):
        # `json.loads` on an integer it will not convert (a plain ValueError)
        return f"an integer longer than {sys.get_int_max_str_digits():,} digits"
    return str(exc)[:120]
