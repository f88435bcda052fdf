"""Fill a data directory from the pinned upstream τ-bench commit, verifying every byte.

The file table (`pinned.json`, shipped in the package) lists each output file of the data
layout with its kind, the upstream file(s) it comes from and the sha256 of both:

* ``verbatim``: the upstream file copied as is (DB JSON, wiki.md → policy.md, few-shot);
* ``tasks``: the ``Task(...)`` literals of one upstream list (``tasks_<split>.py``);
* ``rules``: the upstream ``RULES`` list;
* ``tools``: ``[get_info() of each tool in ALL_TOOLS order]``.

Upstream Python is read with `ast` as literal data (`tau_bench.data.upstream_source`),
never executed. Derived files are ``json.dumps(obj, indent=2) + "\\n"`` and are checked
against their recorded sha256 too, which proves the literal reading right.

Everything is downloaded and built in a temporary directory next to the destination; only
when every checksum matches is it moved into place. On any failure the destination is
left as it was (absent, or its previous complete content) and the temporary files are
removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any

import httpx

from tau_bench.data.errors import DataDirError
from tau_bench.data.upstream import PINNED_COMMIT, UPSTREAM_REPO
from tau_bench.data.upstream_source import (
    UpstreamSourceError,
    read_rules,
    read_tasks,
    read_tool_imports,
    read_tool_info,
)

__all__ = [
    "ChecksumError",
    "FileCheck",
    "PinnedFile",
    "PinnedTable",
    "PullError",
    "Source",
    "build_file",
    "load_pinned",
    "pull_dataset",
    "raw_url",
    "verify_files",
]

RAW_BASE = "https://raw.githubusercontent.com"
# Pause before each retry of a download that failed on the connection or with a 5xx.
RETRY_DELAYS: tuple[float, ...] = (1.0, 2.0, 4.0)
TIMEOUT = httpx.Timeout(60.0, connect=15.0)
KINDS = ("verbatim", "tasks", "rules", "tools")
_OFFLINE_HINT = (
    "on an offline machine, set TAU_BENCH_DATA (or --data-dir) to a τ-bench data directory"
)


class PullError(DataDirError):
    """Filling the data directory failed; nothing was written to the destination."""


class ChecksumError(PullError):
    """A downloaded or derived file does not have its pinned sha256."""

    def __init__(self, name: str, expected: str, actual: str) -> None:
        super().__init__(
            f"checksum mismatch for {name}: expected sha256 {expected}, got {actual}; "
            "nothing was written to the data directory"
        )
        self.name = name
        self.expected = expected
        self.actual = actual


# --------------------------------------------------------------------------- pinned table


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


# --------------------------------------------------------------------------- checks


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _sha256_file(path: Path) -> str:
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
        actual = _sha256_file(target) if target.is_file() else None
        checks.append(FileCheck(f.path, f.sha256, actual))
    return checks


# --------------------------------------------------------------------------- download


def raw_url(path: str, commit: str = PINNED_COMMIT, repo: str = UPSTREAM_REPO) -> str:
    return f"{RAW_BASE}/{repo}/{commit}/{path}"


class _Progress:
    """Byte progress on stderr (rich), or nothing."""

    def __init__(self, enabled: bool, total: int, label: str) -> None:
        self._progress: Any = None
        self._task: Any = None
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self._task = self._progress.add_task(label, total=total)

    def __enter__(self) -> _Progress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, n: int) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def grow(self, n: int) -> None:
        if self._progress is not None:
            total = self._progress.tasks[0].total or 0
            self._progress.update(self._task, total=total + n)

    def describe(self, label: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=label)


def _download(client: httpx.Client, url: str, source: Source, progress: _Progress) -> bytes:
    """GET `url`; retried on connection errors and 5xx, failing fast on other statuses."""
    attempts = len(RETRY_DELAYS) + 1
    problem = ""
    for attempt in range(attempts):
        received = 0
        try:
            with client.stream("GET", url) as response:
                if response.status_code == 200:
                    if source.size is None and response.headers.get("content-length"):
                        progress.grow(int(response.headers["content-length"]))
                    chunks = []
                    for chunk in response.iter_bytes():
                        chunks.append(chunk)
                        received += len(chunk)
                        progress.advance(len(chunk))
                    return b"".join(chunks)
                if response.status_code < 500:
                    raise PullError(
                        f"download failed: HTTP {response.status_code} for {url} "
                        f"(upstream file {source.path}); {_OFFLINE_HINT}"
                    )
                problem = f"HTTP {response.status_code}"
        except httpx.TransportError as exc:
            problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        progress.advance(-received)
        if attempt + 1 < attempts:
            time.sleep(RETRY_DELAYS[attempt])
    raise PullError(
        f"download failed after {attempts} attempts ({problem}) for {url} "
        f"(upstream file {source.path}); {_OFFLINE_HINT}"
    )


# --------------------------------------------------------------------------- build


def _json_bytes(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2) + "\n").encode("utf-8")


def _text(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PullError(f"upstream file {path} is not UTF-8 text: {exc}") from exc


def build_file(entry: PinnedFile, blobs: dict[str, bytes]) -> bytes:
    """The bytes of one output file, made from the downloaded upstream files `blobs`."""
    first = entry.sources[0].path
    try:
        if entry.kind == "verbatim":
            return blobs[first]
        if entry.kind == "tasks":
            if not entry.variable:
                raise PullError(f"pinned table: {entry.path} has no upstream variable")
            return _json_bytes(read_tasks(_text(blobs[first], first), entry.variable))
        if entry.kind == "rules":
            return _json_bytes(read_rules(_text(blobs[first], first)))
        if entry.kind == "tools":
            return _json_bytes(_build_tools(entry, blobs))
    except UpstreamSourceError as exc:
        raise PullError(f"cannot build {entry.path} from upstream {first}: {exc}") from exc
    raise PullError(f"pinned table: unknown kind {entry.kind!r} for {entry.path}")


def _build_tools(entry: PinnedFile, blobs: dict[str, bytes]) -> list[dict[str, Any]]:
    init_path = entry.sources[0].path
    if PurePosixPath(init_path).name != "__init__.py":
        raise PullError(f"pinned table: the first source of {entry.path} must be tools/__init__.py")
    package = PurePosixPath(init_path).parent
    available = {s.path for s in entry.sources}
    infos = []
    for module, class_name in read_tool_imports(_text(blobs[init_path], init_path)):
        tool_path = str(package / (module.replace(".", "/") + ".py"))
        if tool_path not in available:
            raise PullError(
                f"upstream ALL_TOOLS lists {class_name} from {tool_path}, "
                f"which is not among the pinned sources of {entry.path}"
            )
        try:
            infos.append(read_tool_info(_text(blobs[tool_path], tool_path), class_name))
        except UpstreamSourceError as exc:
            raise PullError(f"cannot read the schema of {class_name} ({tool_path}): {exc}") from exc
    return infos


# --------------------------------------------------------------------------- install


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _install(staging: Path, dest: Path) -> None:
    """Move the finished `staging` directory to `dest`, replacing what was there."""
    if not (dest.exists() or dest.is_symlink()):
        os.replace(staging, dest)
        return
    old = dest.with_name(f".{dest.name}.old-{uuid.uuid4().hex[:8]}")
    os.replace(dest, old)
    try:
        os.replace(staging, dest)
    except BaseException:
        os.replace(old, dest)
        raise
    _remove(old)


@contextlib.contextmanager
def _staging_dir(dest: Path) -> Iterator[Path]:
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.partial-", dir=dest.parent))
    try:
        os.chmod(staging, 0o755)
        yield staging
    finally:
        if staging.exists():
            _remove(staging)


def pull_dataset(
    dest: Path,
    *,
    client: httpx.Client | None = None,
    progress: bool = True,
    commit: str = PINNED_COMMIT,
    table: PinnedTable | None = None,
) -> None:
    """Download the pinned upstream files, build the data layout, verify, install at `dest`.

    `table` defaults to the package's `pinned.json`. Raises `PullError` (a `DataDirError`)
    on download failures and `ChecksumError` on any sha256 mismatch; either way `dest` is
    unchanged and no temporary files remain.
    """
    dest = Path(dest).expanduser().absolute()
    table = table or load_pinned()
    sources = table.sources()
    known_total = sum(s.size or 0 for s in sources)
    own_client = client is None
    http = client or httpx.Client(
        timeout=TIMEOUT, follow_redirects=True, headers={"User-Agent": "tau-adapters"}
    )
    try:
        with _staging_dir(dest) as staging:
            label = f"τ-bench data {commit[:12]}"
            with _Progress(progress, known_total, label) as bar:
                blobs: dict[str, bytes] = {}
                for source in sources:
                    data = _download(http, raw_url(source.path, commit, table.repo), source, bar)
                    if source.sha256 is not None:
                        actual = sha256_hex(data)
                        if actual != source.sha256:
                            raise ChecksumError(
                                f"upstream file {source.path} (commit {commit})",
                                source.sha256,
                                actual,
                            )
                    blobs[source.path] = data
                bar.describe("building")
                for entry in table.files:
                    data = build_file(entry, blobs)
                    actual = sha256_hex(data)
                    if actual != entry.sha256:
                        made_from = ", ".join(s.path for s in entry.sources[:2])
                        more = " …" if len(entry.sources) > 2 else ""
                        raise ChecksumError(
                            f"{entry.path} (built from upstream {made_from}{more})",
                            entry.sha256,
                            actual,
                        )
                    target = staging / entry.path
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                bar.describe(f"{label} built, sha256 ok")
            for check in verify_files(staging, table):
                if not check.ok:
                    raise ChecksumError(
                        f"{check.path} (as written)", check.expected, check.actual or "missing"
                    )
            _install(staging, dest)
    finally:
        if own_client:
            http.close()
