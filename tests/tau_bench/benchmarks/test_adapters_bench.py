"""`tau bench adapters`: the table's shape on a tiny run, and bad input (no timing asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau_bench.benchmarks import adapters as bench

from ...conftest import DATA_DIR

TAU = Path(sys.executable).with_name("tau")


def tau(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR)}
    return subprocess.run(
        [str(TAU), "bench", "adapters", *args], capture_output=True, text=True, env=env, timeout=300
    )


def test_a_tiny_run_prints_one_row_per_adapter_and_domain(tmp_path: Path) -> None:
    assert "dialogflow" in bench.available()
    out_json = tmp_path / "rows.json"
    args = ["--adapter", "dialogflow", "--env", "retail", "--tasks", "1", "--repeat", "2"]
    done = tau(*args, "--markdown", "--json", str(out_json))
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("|")]
    assert lines[0] == "| " + " | ".join(bench.COLUMNS) + " |"
    assert len(lines) == 3 and lines[2].startswith("| dialogflow | retail | 1 | ")
    assert "machine:" in done.stdout and "load average" in done.stdout
    (row,) = json.loads(out_json.read_text())
    assert row["adapter"] == "dialogflow" and row["domain"] == "retail"
    assert row["turns"] > 0 and row["cpu_us_per_turn"] > 0 and row["wall_p50_ms"] > 0
    assert row["avg_reward"] == 1.0 and row["errors"] == 0  # the adapter really worked


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--adapter", "nope", "--tasks", "1"], "no installed adapter stand-in named 'nope'"),
        (["--env", "mars"], "unknown --env 'mars'"),
        (
            ["--tasks", "0"],
            "Invalid value for '--tasks': Input should be greater than or equal to 1",
        ),
        (["--agent-option", "trace"], "--agent-option expects KEY=VALUE"),
    ],
)
def test_bad_input_is_one_line(args: list[str], message: str) -> None:
    done = tau(*args)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_calls_keep_their_lowest_cpu_over_rounds() -> None:
    rounds = [bench._Meter(cpus=[3.0, 1.0]), bench._Meter(cpus=[2.0, 4.0])]
    assert bench._lowest_cpus(rounds) == [2.0, 1.0]
    uneven = [bench._Meter(cpus=[3.0, 1.0]), bench._Meter(cpus=[1.0])]
    assert bench._lowest_cpus(uneven) == [1.0]
