"""`tau data pull --suite tau3`: the pinned τ³ upstream files into a data directory.

The package ships `tau3_manifest.json` (paths and sha256 only, derived from the dataset
MANIFEST): every upstream data file (`data/tau2/...`), and the upstream Python files
whose prompt literals are extracted (`tau_bench.data.tau3_prompts`) into `prompts/`.
Every download and every extracted prompt is checked against its sha256; the directory
is built next to the destination and moved into place only when everything matched, so
a failure leaves the destination as it was.

The agent tool schemas (`<domain>/tools.json`) are not files upstream (the original
generates them from Python signatures at run time); they are listed as `derived`, and
`missing_derived` says which a directory lacks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import httpx

from tau_bench.data.pull import (
    TIMEOUT,
    ChecksumError,
    FileCheck,
    PullError,
    Source,
    _download,
    _install,
    _Progress,
    _sha256_file,
    _staging_dir,
    raw_url,
    sha256_hex,
)
from tau_bench.data.tau3_prompts import PROMPTS, PromptSourceError, extract_prompt

__all__ = [
    "Tau3Manifest",
    "load_manifest",
    "missing_derived",
    "pull_tau3",
    "verify_tau3_files",
]


@dataclass(frozen=True)
class Tau3Manifest:
    repo: str
    commit: str
    files: tuple[dict[str, Any], ...]
    derived: tuple[dict[str, Any], ...]
    prompts: tuple[dict[str, Any], ...]


def load_manifest() -> Tau3Manifest:
    """The pinned τ³ manifest shipped with the package."""
    raw = json.loads(
        resources.files("tau_bench.data").joinpath("tau3_manifest.json").read_text("utf-8")
    )
    return Tau3Manifest(
        raw["repo"],
        raw["commit"],
        tuple(raw["files"]),
        tuple(raw.get("derived", [])),
        tuple(raw.get("prompts", [])),
    )


def verify_tau3_files(root: Path, manifest: Tau3Manifest | None = None) -> list[FileCheck]:
    """Data files and prompts under `root` against their pinned sha256."""
    manifest = manifest or load_manifest()
    checks = []
    for entry in (*manifest.files, *manifest.prompts):
        target = Path(root) / entry["path"]
        actual = _sha256_file(target) if target.is_file() else None
        checks.append(FileCheck(entry["path"], entry["sha256"], actual))
    return checks


def missing_derived(root: Path, manifest: Tau3Manifest | None = None) -> list[str]:
    """Derived files (tool schemas) a directory lacks or holds with another sha256."""
    manifest = manifest or load_manifest()
    out = []
    for entry in manifest.derived:
        target = Path(root) / entry["path"]
        if not target.is_file() or _sha256_file(target) != entry["sha256"]:
            out.append(entry["path"])
    return out


def _fetch(
    http: httpx.Client, manifest: Tau3Manifest, path: str, sha: str, size: int | None, bar: Any
) -> bytes:
    data = _download(
        http, raw_url(path, manifest.commit, manifest.repo), Source(path, sha, size), bar
    )
    actual = sha256_hex(data)
    if actual != sha:
        raise ChecksumError(f"upstream file {path} (commit {manifest.commit[:12]})", sha, actual)
    return data


def pull_tau3(
    dest: Path,
    *,
    client: httpx.Client | None = None,
    progress: bool = True,
    manifest: Tau3Manifest | None = None,
) -> None:
    """Download, extract, verify, install at `dest` (atomic; `PullError` on failure)."""
    dest = Path(dest).expanduser().absolute()
    manifest = manifest or load_manifest()
    own = client is None
    http = client or httpx.Client(
        timeout=TIMEOUT, follow_redirects=True, headers={"User-Agent": "tau-adapters"}
    )
    total = sum(int(e.get("size") or 0) for e in manifest.files)
    specs = {p.name: p for p in PROMPTS}
    try:
        with _staging_dir(dest) as staging:
            with _Progress(progress, total, f"τ³ data {manifest.commit[:12]}") as bar:
                for entry in manifest.files:
                    data = _fetch(
                        http,
                        manifest,
                        entry["upstream_path"],
                        entry["sha256"],
                        entry.get("size"),
                        bar,
                    )
                    target = staging / entry["path"]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                sources: dict[str, bytes] = {}
                for entry in manifest.prompts:
                    upstream = entry["upstream_path"]
                    if upstream not in sources:
                        sources[upstream] = _fetch(
                            http,
                            manifest,
                            upstream,
                            entry["source_sha256"],
                            entry.get("source_size"),
                            bar,
                        )
                    spec = specs.get(entry["name"])
                    if spec is None:
                        raise PullError(f"τ³ manifest names an unknown prompt {entry['name']!r}")
                    try:
                        text = extract_prompt(sources[upstream].decode("utf-8"), spec)
                    except (PromptSourceError, UnicodeDecodeError) as exc:
                        raise PullError(f"cannot read prompt {spec.name}: {exc}") from exc
                    data = text.encode("utf-8")
                    if sha256_hex(data) != entry["sha256"]:
                        raise ChecksumError(
                            f"{entry['path']} (extracted from {upstream})",
                            entry["sha256"],
                            sha256_hex(data),
                        )
                    target = staging / entry["path"]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
            for check in verify_tau3_files(staging, manifest):
                if not check.ok:
                    raise ChecksumError(
                        f"{check.path} (as written)", check.expected, check.actual or "missing"
                    )
            _install(staging, dest)
    finally:
        if own:
            http.close()
