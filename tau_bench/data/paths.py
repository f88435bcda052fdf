"""Find the benchmark data directory: --data-dir, then TAU_BENCH_DATA, then the user cache.

Imports point one way: this module may call `tau_bench.data.pull` (lazily, to fill the
cache on first use); `pull` never imports this module (its error type is in `errors`).

The data (DB JSON, tasks, policy, tool schemas) is never part of the package. The cache
is filled by `tau data pull` (automatically on first use) from the pinned upstream commit.
"""

from __future__ import annotations

import os
from pathlib import Path

from tau_bench.data.errors import DataDirError as DataDirError  # re-exported: its old home
from tau_bench.data.errors import probed

ENV_VAR = "TAU_BENCH_DATA"
DOMAINS = ("airline", "retail")
REQUIRED_FILES = (
    "airline/db/flights.json",
    "airline/db/reservations.json",
    "airline/db/users.json",
    "airline/tasks/test.json",
    "airline/tools.json",
    "airline/policy.md",
    "retail/db/orders.json",
    "retail/db/products.json",
    "retail/db/users.json",
    "retail/tasks/test.json",
    "retail/tasks/train.json",
    "retail/tasks/dev.json",
    "retail/tools.json",
    "retail/policy.md",
)


def cache_dir() -> Path:
    """The per-user cache that `tau data pull` fills (one folder per pinned commit)."""
    import platformdirs

    from tau_bench.data.upstream import PINNED_COMMIT

    return Path(platformdirs.user_cache_dir("tau-adapters")) / "tau-bench" / PINNED_COMMIT[:12]


def missing_files(root: Path, source: str = "the data directory") -> list[str]:
    return [rel for rel in REQUIRED_FILES if not probed((root / rel).is_file, root, source)]


def resolve_data_dir(explicit: str | Path | None = None, *, pull: bool = True) -> Path:
    """The data directory to use; pulls into the cache on first use when allowed."""
    if explicit is not None:
        root = Path(explicit).expanduser()
        source = "--data-dir"
    elif os.environ.get(ENV_VAR):
        root = Path(os.environ[ENV_VAR]).expanduser()
        source = ENV_VAR
    else:
        root = cache_dir()
        missing = missing_files(root)
        if missing and pull:
            from tau_bench.data.pull import pull_dataset

            pull_dataset(root)
            missing = missing_files(root)
        if missing:
            raise DataDirError(
                f"benchmark data not found in the cache {root}; run `tau data pull`, "
                f"or point {ENV_VAR} / --data-dir at a τ-bench data directory"
            )
        return root
    if not probed(root.is_dir, root, source):
        raise DataDirError(f"{source} points at {root}, which is not a directory")
    missing = missing_files(root, source)
    if missing:
        shown = ", ".join(missing[:3]) + (" …" if len(missing) > 3 else "")
        raise DataDirError(
            f"{source} points at {root}, which is not a τ-bench data directory (missing {shown})"
        )
    return root
