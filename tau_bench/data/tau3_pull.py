"""`tau data pull --suite tau3`: the pinned τ³ upstream files into a data directory.

The package ships `tau3_manifest.json` (paths and sha256 only, derived from the dataset
MANIFEST): every upstream data file (`data/tau2/...`), and the upstream Python files
whose prompt literals are extracted (`tau_bench.data.tau3_prompts`) into `prompts/`.

The tool schemas (`<domain>/tools.json`, `<domain>/user_tools.json`) are not files
upstream: the original generates them from its toolkit classes at run time. They are
listed as `derived` (with the toolkit module and class), and built from the pinned
toolkit and data-model sources (`tool_sources`) by `tau3_toolschemas`.

Every download, extracted prompt and built schema file is checked against its sha256;
the directory is built next to the destination and moved into place only when
everything matched, so a failure leaves the destination as it was.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import httpx

from tau_bench.data.download import TIMEOUT, Progress, download, raw_url
from tau_bench.data.errors import ChecksumError, PullError
from tau_bench.data.pinned import FileCheck, Source, sha256_file, sha256_hex
from tau_bench.data.pull import install, staging_dir
from tau_bench.data.tau3_prompts import PROMPTS, PromptSourceError, extract_prompt
from tau_bench.data.tau3_toolschemas import ToolSchemaError, render, toolkit_schemas

__all__ = [
    "Tau3Manifest",
    "build_tool_schemas",
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
    tool_sources: tuple[dict[str, Any], ...] = ()


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
        tuple(raw.get("tool_sources", [])),
    )


def verify_tau3_files(root: Path, manifest: Tau3Manifest | None = None) -> list[FileCheck]:
    """Data files, prompts and tool schemas under `root` against their pinned sha256."""
    manifest = manifest or load_manifest()
    checks = []
    for entry in (*manifest.files, *manifest.prompts, *manifest.derived):
        target = Path(root) / entry["path"]
        actual = sha256_file(target) if target.is_file() else None
        checks.append(FileCheck(entry["path"], entry["sha256"], actual))
    return checks


def missing_derived(root: Path, manifest: Tau3Manifest | None = None) -> list[str]:
    """Derived files (tool schemas) a directory lacks or holds with another sha256."""
    manifest = manifest or load_manifest()
    out = []
    for entry in manifest.derived:
        target = Path(root) / entry["path"]
        if not target.is_file() or sha256_file(target) != entry["sha256"]:
            out.append(entry["path"])
    return out


def _fetch(
    http: httpx.Client, manifest: Tau3Manifest, path: str, sha: str, size: int | None, bar: Any
) -> bytes:
    data = download(
        http, raw_url(path, manifest.commit, manifest.repo), Source(path, sha, size), bar
    )
    actual = sha256_hex(data)
    if actual != sha:
        raise ChecksumError(f"upstream file {path} (commit {manifest.commit[:12]})", sha, actual)
    return data


def build_tool_schemas(manifest: Tau3Manifest, sources: Mapping[str, bytes]) -> dict[str, bytes]:
    """Every `derived` schema file built from `{upstream path: source bytes}`, each checked
    against its pinned sha256 (`ChecksumError` naming the file, `PullError` otherwise)."""
    texts = {}
    for path, data in sources.items():
        try:
            texts[path] = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PullError(f"upstream file {path} is not UTF-8 text: {exc}") from exc
    built = {}
    for entry in manifest.derived:
        if "module" not in entry or "class" not in entry:
            raise PullError(f"τ³ manifest does not say which toolkit builds {entry['path']}")
        origin = f"{entry['module']}.{entry['class']}"
        try:
            data = render(toolkit_schemas(texts, entry["module"], entry["class"]))
        except ToolSchemaError as exc:
            raise PullError(f"cannot build {entry['path']} from {origin}: {exc}") from exc
        if sha256_hex(data) != entry["sha256"]:
            raise ChecksumError(
                f"{entry['path']} (built from upstream {origin})",
                entry["sha256"],
                sha256_hex(data),
            )
        built[entry["path"]] = data
    return built


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
    prompt_sources = {e["upstream_path"]: e.get("source_size") for e in manifest.prompts}
    total = sum(
        int(size or 0)
        for size in (
            *(e.get("size") for e in (*manifest.files, *manifest.tool_sources)),
            *prompt_sources.values(),
        )
    )
    specs = {p.name: p for p in PROMPTS}
    try:
        with staging_dir(dest) as staging:
            with Progress(progress, total, f"τ³ data {manifest.commit[:12]}") as bar:
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
                toolkit_sources = {
                    e["upstream_path"]: _fetch(
                        http, manifest, e["upstream_path"], e["sha256"], e.get("size"), bar
                    )
                    for e in manifest.tool_sources
                }
            for path, data in build_tool_schemas(manifest, toolkit_sources).items():
                target = staging / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            for check in verify_tau3_files(staging, manifest):
                if not check.ok:
                    raise ChecksumError(
                        f"{check.path} (as written)", check.expected, check.actual or "missing"
                    )
            install(staging, dest)
    finally:
        if own:
            http.close()
