"""Where generated tasks go: a JSONL tasks file (one task per line, flushed per task,
readable by `tau_bench.tasks.load_tasks`), an optional JSONL of rejected samples, and a
`<name>.runs.jsonl` sidecar with one summary line per `tau sdg generate` run (what
`tau sdg stats` reads for the validation rate)."""

from __future__ import annotations

import json
from pathlib import Path
from types import TracebackType
from typing import IO, Any


def runs_path(output_file: Path) -> Path:
    return output_file.with_suffix(".runs.jsonl")


class JsonlWriter:
    """Appends one JSON object per line and flushes it, so a crash loses at most a line."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._fh: IO[str] | None = None

    def __enter__(self) -> JsonlWriter:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("a", encoding="utf-8")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def write(self, record: dict[str, Any]) -> None:
        if self._fh is None:
            return
        self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._fh.flush()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSONL file; lines that are not JSON objects are skipped."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def next_sample_index(paths: list[Path | None], env: str, difficulty: str, seed: int) -> int:
    """First sample index not used yet by a run with the same env, difficulty and seed,
    so that generating again into the same file adds new samples instead of repeats."""
    used = -1
    for path in paths:
        if path is None:
            continue
        for record in read_jsonl(path):
            prov = record.get("provenance") or {}
            if (
                prov.get("env") == env
                and prov.get("difficulty") == difficulty
                and prov.get("seed") == seed
                and isinstance(prov.get("sample_index"), int)
            ):
                used = max(used, prov["sample_index"])
    return used + 1
