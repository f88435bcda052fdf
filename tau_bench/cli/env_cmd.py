"""`tau env exec`: run tool calls read as JSON lines on a domain, print observations.

For debugging what a hosted agent's tool calls do. Each input line is a tool call
`{"name": ..., "kwargs": {...}}` or `{"reset": true}` (start again from the pristine DB);
each tool call prints `{"observation": <str>, "data_hash": <str>}`. τ³ domains
(`--env tau3/<domain>`) have their own interface: see `tau_bench.cli.tau3_cmds`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from tau_adapters import jsonsafe

app = typer.Typer(no_args_is_help=True)


@app.command("exec")
def exec_(
    env: str = typer.Option(..., "--env", help="Domain: airline or retail."),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="τ-bench data directory."),
    deterministic_ids: bool = typer.Option(
        False,
        "--deterministic-ids",
        help="τ³: ids drawn at random (uuid4) become B00000001, B00000002, … in draw order.",
    ),
) -> None:
    """Read tool calls as JSON lines on stdin; write one JSON line per call."""
    from tau_bench.cli.errors import fail
    from tau_bench.suites import load_domain

    if env.strip().startswith("tau3/"):
        from tau_bench.cli.tau3_cmds import exec_tau3

        exec_tau3(env.strip(), data_dir, deterministic_ids)
        return
    if deterministic_ids:
        fail("--deterministic-ids is for τ³ domains (--env tau3/...)")

    domain = load_domain(env, data_dir)
    environment = domain.new_env()
    out = sys.stdout
    for lineno, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        try:
            request = jsonsafe.loads(line)
        except jsonsafe.JSONDepthError as exc:
            fail(f"line {lineno}: {exc}")
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
