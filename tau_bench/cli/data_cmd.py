"""`tau data pull | path | verify`: the benchmark data directory.

A pull that cannot make or write its destination, a download that fails or is refused
(too large, too slow: `tau_bench.data.download`) is one `error:` line and exit 2; SIGTERM
during a pull removes its temporary directory and exits 143 (`tau_bench.data.pull`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import typer

from tau_bench.cli.errors import fail

app = typer.Typer(no_args_is_help=True, add_completion=False)

SUITES = ("tau-bench", "tau3")


def _suite_option() -> str:
    return typer.Option(
        "tau-bench", "--suite", help="Which benchmark's data: tau-bench (v1) or tau3."
    )


@app.command()
def pull(
    dest: Path | None = typer.Option(
        None, "--dest", help="Directory to fill (default: the per-user cache)."
    ),
    force: bool = typer.Option(
        False, "--force", help="Download again and replace whatever is at the destination."
    ),
    suite: str = _suite_option(),
) -> None:
    """Download the pinned upstream data, verify every sha256, install it."""
    if suite == "tau3":
        _pull_tau3(dest, force)
        return
    if suite not in SUITES:
        fail(f"unknown suite {suite!r} (available: {', '.join(SUITES)})")
    from tau_bench.data.paths import DataDirError, cache_dir
    from tau_bench.data.pinned import load_pinned, verify_files
    from tau_bench.data.pull import pull_dataset

    target = (dest or cache_dir()).expanduser()
    table = load_pinned()

    def complete() -> bool:
        return all(check.ok for check in verify_files(target, table))

    if _up_to_date(
        target, force, complete, f"τ-bench data directory of commit {table.commit[:12]}"
    ):
        return
    try:
        pull_dataset(target, table=table, commit=table.commit)
    except DataDirError as exc:
        fail(str(exc))
    print(f"τ-bench data ({len(table.files)} files, verified) in {target}", file=sys.stderr)
    print(target)


def _up_to_date(target: Path, force: bool, complete: Callable[[], bool], what: str) -> bool:
    """True (after saying so) when `target` already holds the verified data; `fail` when
    it holds something else and `force` is off, or cannot be looked at."""
    if force:
        return False
    try:
        if not target.exists():
            return False
        if target.is_dir() and complete():
            print(f"already up to date: {target}", file=sys.stderr)
            print(target)
            return True
        if target.is_dir() and not any(target.iterdir()):
            return False
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        fail(f"cannot read {target}: {exc.strerror or exc}{where}")
    fail(f"{target} exists and is not a complete {what}; pass --force to replace it")


def _pull_tau3(dest: Path | None, force: bool) -> None:
    """τ³ data and prompts from the pinned tau2-bench commit (`tau_bench.data.tau3_pull`)."""
    from tau_bench.data.paths import DataDirError
    from tau_bench.data.tau3_pull import (
        load_manifest,
        pull_tau3,
        verify_tau3_files,
    )
    from tau_bench.tau3.data import cache_dir

    target = (dest or cache_dir()).expanduser()
    manifest = load_manifest()

    def complete() -> bool:
        return all(c.ok for c in verify_tau3_files(target, manifest))

    if _up_to_date(target, force, complete, f"τ³ data directory of commit {manifest.commit[:12]}"):
        return
    try:
        pull_tau3(target, manifest=manifest)
    except DataDirError as exc:
        fail(str(exc))
    count = len(manifest.files) + len(manifest.prompts) + len(manifest.derived)
    print(
        f"τ³ data ({count} files: data, prompts and tool schemas, verified) in {target}",
        file=sys.stderr,
    )
    print(target)


def _root(suite: str, data_dir: Path | None) -> Path:
    """The suite's data directory in use (`--data-dir`, else its variable, else the cache)."""
    from tau_bench.data.paths import DataDirError, resolve_data_dir
    from tau_bench.tau3.data import resolve_tau3_data_dir

    if suite not in SUITES:
        fail(f"unknown suite {suite!r} (available: {', '.join(SUITES)})")
    try:
        if suite == "tau3":
            return resolve_tau3_data_dir(data_dir)
        return resolve_data_dir(data_dir, pull=False)
    except DataDirError as exc:
        fail(str(exc))


@app.command()
def path(
    data_dir: Path | None = typer.Option(
        None, "--data-dir", help="Use this directory instead of the suite's variable / the cache."
    ),
    suite: str = _suite_option(),
) -> None:
    """Print the data directory in use (--data-dir, else TAU_BENCH_DATA or, for tau3,
    TAU3_BENCH_DATA, else the cache)."""
    print(_root(suite, data_dir))


@app.command()
def verify(
    data_dir: Path | None = typer.Option(
        None, "--data-dir", help="Use this directory instead of the suite's variable / the cache."
    ),
    suite: str = _suite_option(),
) -> None:
    """Check every file of the data directory against the pinned sha256."""
    from rich.table import Table

    from tau_bench import terminal
    from tau_bench.data.pinned import load_pinned, verify_files
    from tau_bench.data.tau3_pull import load_manifest, verify_tau3_files

    root = _root(suite, data_dir)
    if suite == "tau3":
        manifest = load_manifest()
        commit, checks = manifest.commit, verify_tau3_files(root, manifest)
    else:
        table = load_pinned()
        commit, checks = table.commit, verify_files(root, table)

    out = Table(title=f"{root} vs pinned commit {commit[:12]}")
    out.add_column("file", no_wrap=True)
    out.add_column("status", no_wrap=True)
    out.add_column("sha256", no_wrap=True)
    styles = {"ok": "green", "missing": "yellow", "mismatch": "bold red"}
    for check in checks:
        shown = check.expected[:16]
        if check.status == "mismatch" and check.actual:
            shown = f"{check.expected[:16]} ≠ {check.actual[:16]}"
        out.add_row(check.path, terminal.styled(check.status, styles[check.status]), shown)
    terminal.console(width=max(120, terminal.console().width)).print(out)

    bad = [c for c in checks if not c.ok]
    if bad:
        names = ", ".join(f"{c.path} ({c.status})" for c in bad[:5])
        fail(f"{len(bad)} of {len(checks)} files do not match the pinned sha256: {names}")
    print(f"all {len(checks)} files match the pinned sha256", file=sys.stderr)
