"""`tau bench runner`'s library: a real small run against the fake server, the table, and
no import of the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tau_bench.benchmarks
from tau_bench.benchmarks import runner as bench

from ...conftest import DATA_DIR


def test_a_small_level_runs_six_calls_per_episode_and_respects_the_bound() -> None:
    rows = bench.run_runner_benchmark(
        [(2, 2)],
        latency=0.02,
        data_dir=str(DATA_DIR),
        stacks=("raw", "litellm", "direct"),
        backends=("local", "ray"),
        workers=(1,),
    )
    assert [r["stack"] for r in rows] == [
        "raw",
        "litellm",
        "litellm ray x1",
        "direct",
        "direct ray x1",
    ]
    for row in rows:
        assert row["errors"] == 0, row["error_kinds"]
        assert row["calls_per_episode"] == 6
        assert row["wall_s"] >= row["bound_s"] > 0
        assert row["cpu_s"] > 0  # Ray rows: the workers' own CPU is reported and counted
    table = bench.markdown(rows)
    assert table.count("\n") == 6 and "| raw |" in table


def test_levels_syntax() -> None:
    assert bench.parse_levels("1:20, 50") == [(1, 20), (50, 500)]
    with pytest.raises(ValueError, match="bad level"):
        bench.parse_levels("x:1")


def test_bad_arguments_are_value_errors() -> None:
    with pytest.raises(ValueError, match="unknown stack"):
        bench.run_runner_benchmark([(1, 1)], stacks=("nope",))
    with pytest.raises(ValueError, match="--workers"):
        bench.run_runner_benchmark([(1, 1)], stacks=("raw",), workers=(0,))
    with pytest.raises(ValueError, match="unknown backend"):
        bench.run_runner_benchmark([(1, 1)], stacks=("raw",), backends=("spark",))
    assert bench.parse_workers("1, 2") == (1, 2)
    with pytest.raises(ValueError, match="--workers"):
        bench.parse_workers("one")


def test_the_benchmarks_never_import_the_cli() -> None:
    root = Path(tau_bench.benchmarks.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            offenders += [f"{path.name}: {n}" for n in names if n.startswith("tau_bench.cli")]
    assert offenders == []
