"""Byte-exact check of the τ³ tool schemas against the real upstream source (opt-in).

Upstream source is never committed, so this runs only when `TAU3_UPSTREAM_SRC` points at
a checkout (or export) of sierra-research/tau2-bench at the pinned commit, e.g.

    git clone https://github.com/sierra-research/tau2-bench /tmp/tau2-bench
    git -C /tmp/tau2-bench checkout a2c024725189473d2d7cea3a5cfdbcc67478e41f
    TAU3_UPSTREAM_SRC=/tmp/tau2-bench .venv/bin/pytest \
        tests/tau_bench/tau3/suite/upstream_tool_schemas_check.py

Every schema file must reproduce the manifest's sha256 (the sha256 of the original's
files) and, where a τ³ data copy (`TAU3_BENCH_DATA`) or pulled cache holds them, the
same bytes.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from tau_bench.data.tau3_pull import build_tool_schemas, load_manifest

UPSTREAM = os.environ.get("TAU3_UPSTREAM_SRC")

if not UPSTREAM:  # run on purpose only (not collected by default: its name is not test_*)
    raise SystemExit(
        "set TAU3_UPSTREAM_SRC to an upstream tau2-bench checkout at the pinned commit"
    )


def test_schema_files_are_byte_identical_to_the_originals() -> None:
    manifest = load_manifest()
    root = Path(UPSTREAM or ".")
    sources = {}
    for entry in manifest.tool_sources:
        data = (root / entry["upstream_path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], (
            f"{entry['upstream_path']} is not the pinned commit's ({manifest.commit[:12]})"
        )
        sources[entry["upstream_path"]] = data
    built = build_tool_schemas(manifest, sources)  # raises on any sha256 mismatch
    assert sorted(built) == sorted(e["path"] for e in manifest.derived)
    copy = os.environ.get("TAU3_BENCH_DATA")
    if copy:
        for path, data in built.items():
            if (Path(copy) / path).is_file():
                assert (Path(copy) / path).read_bytes() == data, path
