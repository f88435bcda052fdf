"""`tau bench core|runner`: performance benchmarks that print a table."""

from __future__ import annotations

import json
import platform
from pathlib import Path

import typer

app = typer.Typer(no_args_is_help=True)


def _machine() -> str:
    import os

    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


@app.command("core")
def core(
    data_dir: Path | None = typer.Option(None, "--data-dir", help="τ-bench data directory."),
    repeat: int = typer.Option(20, help="Samples per median."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the figures as JSON."),
) -> None:
    """Data load, reset, tool steps, hash, reward, verification and memory per domain."""
    from rich.console import Console

    from tau_bench.benchmarks.core import render, run
    from tau_bench.data.paths import resolve_data_dir

    root = resolve_data_dir(data_dir)
    results = run(root, repeat)
    console = Console(width=150)
    console.print(render(results))
    console.print(f"machine: {_machine()}")
    if json_out:
        json_out.write_text(json.dumps(results, indent=2))
