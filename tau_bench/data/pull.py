"""Fill a data directory from the pinned upstream τ-bench commit, verifying every byte.

The file table (`pinned.json`, shipped in the package; read and checked in `pinned`,
downloaded by `download`) lists each output file of the data layout with its kind, the
upstream file(s) it comes from and the sha256 of both:

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
removed. That holds for SIGTERM too: while the temporary directory exists, SIGTERM (when
nothing else handles it) ends the process as Ctrl-C would, after removing it, with exit
status 143 (128 + SIGTERM), instead of killing it with the directory left behind. A
destination that cannot be made or written (under a file, in a read-only place) is a
`PullError` naming it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import httpx

from tau_bench.data.download import TIMEOUT, Progress, download, raw_url
from tau_bench.data.errors import ChecksumError, PullError
from tau_bench.data.pinned import PinnedFile, PinnedTable, load_pinned, sha256_hex, verify_files
from tau_bench.data.upstream import PINNED_COMMIT
from tau_bench.data.upstream_source import (
    UpstreamSourceError,
    read_rules,
    read_tasks,
    read_tool_imports,
    read_tool_info,
)

__all__ = ["build_file", "install", "pull_dataset", "staging_dir"]


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


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def install(staging: Path, dest: Path) -> None:
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
def staging_dir(dest: Path) -> Iterator[Path]:
    """A new temporary directory next to `dest`, removed on the way out whatever happens
    (SIGTERM included: see `_Termination`). An `OSError` making it or inside the block
    (writing a file, installing) is a `PullError`."""
    termination = _Termination()
    with termination.handled():
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.partial-", dir=dest.parent))
        except OSError as exc:
            raise PullError(
                f"cannot create the data directory {dest}: {_os_problem(exc)}"
            ) from None
        try:
            os.chmod(staging, 0o755)
            yield staging
        except OSError as exc:
            raise PullError(
                f"cannot write the data directory {dest}: {_os_problem(exc)}; "
                "nothing was written to it"
            ) from None
        finally:
            termination.armed = False  # a SIGTERM from now on waits for the clean-up
            if staging.exists():
                _remove(staging)


def _os_problem(exc: OSError) -> str:
    if isinstance(exc, FileExistsError | NotADirectoryError) and exc.filename:
        # The nearest existing folder on the way is something else (a file).
        path = Path(exc.filename)
        found = next((p for p in (path, *path.parents) if os.path.lexists(p)), path)
        return f"{found} is not a directory"
    where = f" ({exc.filename})" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"


TERMINATED = 128 + signal.SIGTERM
"""Exit status of a process that SIGTERM ended while a pull was under way (143)."""


class _Termination:
    """SIGTERM during a pull as `SystemExit(TERMINATED)`: it unwinds like Ctrl-C (every
    `finally` runs, the temporary directory is removed) instead of killing the process
    with the directory left behind. While disarmed (the clean-up) a SIGTERM is held and
    raised once the handler is removed."""

    def __init__(self) -> None:
        self.armed = True
        self.pending = False

    def __call__(self, signum: int, frame: object) -> None:
        if self.armed:
            self.armed = False
            raise SystemExit(TERMINATED)
        self.pending = True

    @contextlib.contextmanager
    def handled(self) -> Iterator[None]:
        """This as SIGTERM's handler in the block. Only in the main thread, and only when
        SIGTERM has its default action: a server or a caller with its own handler (or
        one that ignores it) keeps it."""
        if (
            threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
        ):
            yield
            return
        signal.signal(signal.SIGTERM, self)
        try:
            yield
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            if self.pending:
                raise SystemExit(TERMINATED)


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
        with staging_dir(dest) as staging:
            label = f"τ-bench data {commit[:12]}"
            with Progress(progress, known_total, label) as bar:
                blobs: dict[str, bytes] = {}
                for source in sources:
                    data = download(http, raw_url(source.path, commit, table.repo), source, bar)
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
            install(staging, dest)
    finally:
        if own_client:
            http.close()
