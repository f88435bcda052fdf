"""`tau env exec`: run tool calls read as JSON lines on a domain, print observations.

For debugging what a hosted agent's tool calls do. Each input line is a tool call
`{"name": ..., "kwargs": {...}}` or `{"reset": true}` (start again from the pristine DB);
each tool call prints `{"observation": <str>, "data_hash": <str>}`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

app = typer.Typer(no_args_is_help=True)


@app.command("exec")
def exec_(
    env: str = typer.Option(..., "--env", help="Domain: airline or retail."),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="τ-bench data directory."),
) -> None:
    """Read tool calls as JSON lines on stdin; write one JSON line per call."""
    from tau_bench.cli.errors import fail
    from tau_bench.suites import load_domain

    domain = load_domain(env, data_dir)
    environment = domain.new_env()
    out = sys.stdout
    for lineno, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except json.JSONDecodeError as exc:
            fail(f"line {lineno}: not JSON ({exc.msg})")
        if not isinstance(request, dict):
            fail(f"line {lineno}: expected a JSON object")
        if request.get("reset") is True:
            environment = domain.new_env()
            continue
        if "name" not in request:
            fail(f'line {lineno}: expected {{"name": ..., "kwargs": {{...}}}} or {{"reset": true}}')
        observation = environment.execute(request["name"], request.get("kwargs", {})).content
        out.write(
            json.dumps({"observation": observation, "data_hash": environment.data_hash()}) + "\n"
        )
        out.flush()
