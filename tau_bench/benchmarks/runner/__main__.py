"""`python -m tau_bench.benchmarks.runner`: the runner benchmark without the `tau` CLI
(`tau bench runner` takes the same options, plus `--progress`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tau_bench.benchmarks.runner.levels import (
    ALL_STACKS,
    DEFAULT_LATENCY,
    DEFAULT_LEVELS,
    STACK_HELP,
    STACKS,
    run_runner_benchmark,
)
from tau_bench.benchmarks.runner.measure import DEFAULT_MODEL
from tau_bench.benchmarks.runner.render import markdown, parse_levels, render

DESCRIPTION = "Runner benchmark: how close does `tau run` get to its model calls' latency bound?"


def main(argv: list[str] | None = None) -> int:
    """Parse the options, run the benchmark, print the table."""
    parser = argparse.ArgumentParser(
        prog="python -m tau_bench.benchmarks.runner", description=DESCRIPTION
    )
    parser.add_argument(
        "--levels",
        default=",".join(f"{c}:{n}" for c, n in DEFAULT_LEVELS),
        help="concurrency:episodes pairs, comma separated (default 1:20,50:500,200:500)",
    )
    parser.add_argument("--episodes", type=int, help="episodes at every level (overrides)")
    parser.add_argument("--latency", type=float, default=DEFAULT_LATENCY)
    parser.add_argument("--env", default="airline")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="model name sent (and priced)")
    parser.add_argument(
        "--stack",
        choices=[*ALL_STACKS, "both", "all"],
        default="both",
        help="both = litellm and raw; all adds litellm-sdk. "
        + "; ".join(f"{k}: {v}" for k, v in STACK_HELP.items()),
    )
    parser.add_argument(
        "--processes", type=int, default=1, help="split every level over N processes"
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="run every level with tau run --workers N"
    )
    parser.add_argument("--data-dir")
    parser.add_argument("--json", help="also write the rows as JSON to this file")
    parser.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    args = parser.parse_args(argv)
    try:
        levels = parse_levels(args.levels)
    except ValueError as exc:
        parser.error(str(exc))
    if args.episodes:
        levels = [(c, args.episodes) for c, _ in levels]
    stacks = {"both": STACKS, "all": ALL_STACKS}.get(args.stack, (args.stack,))
    try:
        rows = run_runner_benchmark(
            levels,
            args.latency,
            args.env,
            args.data_dir,
            stacks,
            args.model,
            None,
            args.processes,
            args.workers,
        )
    except ValueError as exc:
        parser.error(str(exc))
    from rich.console import Console

    console = Console(width=200)
    console.print(render(rows, args.latency))
    if args.markdown:
        print(markdown(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
