"""`tau env exec`: run tool calls read as JSON lines on a domain, print observations.

For debugging what a hosted agent's tool calls do. Each input line is a tool call
`{"name": ..., "kwargs": {...}}` or `{"reset": true}` (start again from the pristine DB);
each tool call prints `{"observation": <str>, "data_hash": <str>}`. τ³ domains
(`--env tau3/<domain>`) have their own interface: see `tau_bench.cli.tau3_cmds`.

A line that does not decode (bad JSON, nested deeper than 100 levels, a number too long
to read) is one `error: line N: ...` and exit 2, on both (`read_request`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from tau_adapters import jsonsafe

app = typer.Typer(no_args_is_help=True)


def read_request(line: str, lineno: int) -> Any:
    """One input line decoded (`jsonsafe.loads`: depth-bounded, never a RecursionError);
    anything that does not decode is `error: line N: ...`, exit 2."""
    from tau_bench.cli.errors import fail

    try:
        return jsonsafe.loads(line)
    except jsonsafe.JSONDepthError as exc:
        fail(f"line {lineno}: {exc}")
    except json.JSONDecodeError as exc:
        fail(f"line {lineno}: not JSON ({exc.msg})")
    except ValueError:  # an integer past Python's digit limit for int(str)
        fail(
            f"line {lineno}: a number has more than {sys.get_int_max_str_digits()} digits "
            "(too long to read)"
        )


@app.command("exec")
def exec_(
    env: str = typer.Option(
        ...,
        "--env",
        help="Domain: airline, retail, or a τ³ domain (tau3/airline, tau3/retail, "
        "tau3/telecom, ...).",
    ),
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

        exec_tau3(env.strip(), data_dir, deterministic_ids, read_request)
        return
    if deterministic_ids:
        fail("--deterministic-ids is for τ³ domains (--env tau3/...)")

    domain = load_domain(env, data_dir)
    environment = domain.new_env()
    out = sys.stdout
    for lineno, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        request = read_request(line, lineno)
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
