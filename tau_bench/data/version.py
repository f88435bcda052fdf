"""A data directory's version, for run manifests: the upstream commit and file digests.

The MANIFEST.json that `tau data pull` writes (and that offline copies carry) lists every
file with its sha256; a run records the digests of its domain's files so that two runs
on different data are told apart. Digests are read from the manifest, not recomputed.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

MANIFEST = "MANIFEST.json"


@lru_cache(maxsize=32)
def _manifest(root: Path) -> dict[str, Any]:
    try:
        data = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def data_version(root: Path, prefix: str) -> dict[str, Any]:
    """`{"commit", "files": {relative path: sha256}}` for the files under `prefix`/."""
    manifest = _manifest(Path(root).resolve())
    upstream = manifest.get("upstream") or {}
    files = manifest.get("files") or {}
    wanted = prefix.rstrip("/") + "/"
    return {
        "repo": upstream.get("repo"),
        "commit": upstream.get("commit"),
        "files": {
            rel: info.get("sha256")
            for rel, info in sorted(files.items())
            if rel.startswith(wanted) and isinstance(info, dict)
        },
    }
