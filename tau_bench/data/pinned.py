"""The pinned file table (`pinned.json`) of the τ-bench data, and checking files against it.

Each output file of the data layout is listed with its kind, the upstream file(s) it
comes from and the sha256 of both; `verify_files` is what `tau data verify` and the end
of `tau data pull` check.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

KINDS = ("verbatim", "tasks", "rules", "tools")


@dataclass(frozen=True)
class Source:
    """One upstream file (path inside the upstream repository)."""

    path: str
    sha256: str | None = None
    size: int | None = None


@dataclass(frozen=True)
class PinnedFile:
    """One file of the data layout and how it is made."""

    path: str
    kind: str
    sha256: str
    sources: tuple[Source, ...]
    size: int | None = None
    variable: str | None = None


@dataclass(frozen=True)
class PinnedTable:
    repo: str
    commit: str
    files: tuple[PinnedFile, ...]

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> PinnedTable:
        files = []
        for item in raw["files"]:
            if item["kind"] not in KINDS:
                raise ValueError(f"pinned table: unknown kind {item['kind']!r} for {item['path']}")
            files.append(
                PinnedFile(
                    path=item["path"],
                    kind=item["kind"],
                    sha256=item["sha256"],
                    size=item.get("size"),
                    variable=item.get("variable"),
                    sources=tuple(
                        Source(s["path"], s.get("sha256"), s.get("size")) for s in item["sources"]
                    ),
                )
            )
        return cls(repo=raw["repo"], commit=raw["commit"], files=tuple(files))

    def to_dict(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "commit": self.commit,
            "files": [
                {
                    "path": f.path,
                    "kind": f.kind,
                    **({"variable": f.variable} if f.variable else {}),
                    "sha256": f.sha256,
                    "size": f.size,
                    "sources": [
                        {"path": s.path, "sha256": s.sha256, "size": s.size} for s in f.sources
                    ],
                }
                for f in self.files
            ],
        }

    def sources(self) -> list[Source]:
        """Every upstream file to download, once each, in table order."""
        seen: dict[str, Source] = {}
        for f in self.files:
            for s in f.sources:
                seen.setdefault(s.path, s)
        return list(seen.values())


def load_pinned() -> PinnedTable:
    """The table shipped with the package (`tau_bench/data/pinned.json`)."""
    text = resources.files("tau_bench.data").joinpath("pinned.json").read_text(encoding="utf-8")
    return PinnedTable.from_dict(json.loads(text))


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class FileCheck:
    path: str
    expected: str
    actual: str | None  # None: missing

    @property
    def ok(self) -> bool:
        return self.actual == self.expected

    @property
    def status(self) -> str:
        if self.actual is None:
            return "missing"
        return "ok" if self.ok else "mismatch"


def verify_files(root: Path, table: PinnedTable | None = None) -> list[FileCheck]:
    """Check every file of the table under `root` against its pinned sha256."""
    table = table or load_pinned()
    checks = []
    for f in table.files:
        target = root / f.path
        actual = sha256_file(target) if target.is_file() else None
        checks.append(FileCheck(f.path, f.sha256, actual))
    return checks
