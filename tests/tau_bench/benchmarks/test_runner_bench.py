"""`tau bench runner`'s library: a real small run against the fake server, the table, and
no import of the CLI."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from typing import Any

import pytest

import tau_bench.benchmarks
from tau_bench.benchmarks import runner as bench
from tau_bench.benchmarks.runner.ceiling import parallel_ceiling
from tau_bench.benchmarks.runner.levels import (
    add_ceiling,
    add_scaling,
    collapse,
    steady_cpu,
    steady_rate,
)
from tau_bench.benchmarks.runner.machine_cpu import KINDS, CPUTimeline
from tau_bench.benchmarks.runner.measure import Completions, tasks_file
from tau_bench.llm import llm_path

from ...conftest import DATA_DIR


def test_a_small_level_runs_six_calls_per_episode_and_respects_the_bound() -> None:
    rows = bench.run_runner_benchmark(
        [(2, 10)],
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
        split = row["driver_cpu_ms_per_call"] + row["workers_cpu_ms_per_call"]
        assert split == pytest.approx(row["cpu_ms_per_call"])
        assert (row["workers_cpu_ms_per_call"] > 0) is (row["backend"] == "ray")
        assert row["server_cpu_ms_per_call"] > 0 and 0 < row["first_done_s"] <= row["wall_s"]
        # Ray's services: measured on Ray rows only (a short level may cost them nothing)
        assert (row["ray_cpu_ms_per_call"] is not None) is (row["backend"] == "ray")
        assert (row["ray_cpu_ms_per_call"] or 0.0) >= 0
        # the measured processes ran on this machine's cores, and not on more than it has
        assert 0 < row["busy_cores"] <= (os.cpu_count() or 1) + 0.05
        # 5 waves: a steady window, with its own CPU by kind (the workers' on Ray rows)
        steady = row["steady_cpu_ms_per_call"]
        assert set(steady) == set(KINDS) and min(steady.values()) > -0.01
        assert row["backend"] == "local" or steady["workers"] > 0
    assert [r.get("scaling") for r in rows] == [None, None, 1.0, None, 1.0]
    assert llm_path() == "auto"  # the runs' --llm-path does not outlive the benchmark
    table = bench.markdown(rows)
    assert table.count("\n") == 6 and "| raw |" in table


def test_a_level_split_over_two_processes_counts_both() -> None:
    # Equal shares: both processes build their tasks file at the same moment.
    rows = bench.run_runner_benchmark(
        [(4, 8)], latency=0.02, data_dir=str(DATA_DIR), stacks=("direct",), processes=2
    )
    (row,) = rows
    assert row["stack"] == "direct x2 proc" and row["errors"] == 0, row["error_kinds"]
    assert row["calls"] == 8 * 6 and row["calls_per_episode"] == 6
    assert len(row["error_kinds"]) == 2  # one summary from each process


def test_every_tasks_file_is_a_new_file(tmp_path: Path) -> None:
    first = tasks_file(tmp_path, "airline", str(DATA_DIR), 3)
    second = tasks_file(tmp_path, "airline", str(DATA_DIR), 3)
    assert first != second  # concurrent writers of one level never share a file
    assert first.read_text() == second.read_text()
    assert len(json.loads(first.read_text())) == 3


COMPLETE_ROW: dict[str, Any] = {
    "stack": "direct",
    "concurrency": 8,
    "episodes": 40,
    "calls_per_episode": 6.0,
    "wall_s": 1.0,
    "bound_s": 1.0,
    "wall_over_bound": 1.0,
    "wave_bound_s": 1.0,
    "wall_over_wave_bound": 1.0,
    "cpu_s": 1.0,
    "cpu_ms_per_call": 1.0,
    "calls_per_s": 240.0,
    "connections": 8,
    "agent_turn_p50_s": 0.2,
    "agent_turn_p95_s": 0.3,
    "peak_rss_mb": 100.0,
    "errors": 0,
}


def test_the_steady_rate_leaves_out_the_start_and_the_last_wave() -> None:
    # 10 s of start-up, then an episode stored every 0.1 s, then a slow tail.
    done = [10.0 + 0.1 * i for i in range(80)] + [20.0 + i for i in range(20)]
    assert steady_rate(done, 6.0) == pytest.approx(60.0)  # 6 calls per 0.1 s
    assert steady_rate([1.0, 2.0], 6.0) is None  # too few episodes to tell
    # Bursts of 10 episodes every second: 10 episodes/s whichever bursts the window cuts.
    bursts = [float(second) + 0.001 * i for second in range(1, 21) for i in range(10)]
    assert steady_rate(bursts, 1.0) == pytest.approx(10.0, rel=0.02)


def test_the_steady_cpu_is_the_windows_cores_over_the_steady_rate() -> None:
    # 10 s of start-up (the driver busy, no worker yet), then a worker's core, a fifth
    # of one for the fake server; episodes stored every 0.1 s from 10 s to 30 s.
    timeline = CPUTimeline(server_pid=0)
    timeline.times = [float(t) for t in range(31)]
    timeline.totals = [
        {
            "driver": min(t, 10) + 0.05 * max(0, t - 10),
            "workers": 1.0 * max(0, t - 10),
            "server": 0.2 * max(0, t - 10),
            "ray": 0.02 * t,
            "steal": 0.0,
        }
        for t in range(31)
    ]
    done = [10.0 + 0.1 * i for i in range(200)]
    rate = steady_rate(done, 6.0)
    assert rate == pytest.approx(60.0)
    split = steady_cpu(timeline, done, rate)
    assert split is not None  # per call: cores ÷ 60 calls/s, start-up left out
    assert split["workers"] == pytest.approx(1000 / 60)
    assert split["driver"] == pytest.approx(1000 * 0.05 / 60)
    assert split["server"] == pytest.approx(1000 * 0.2 / 60)
    assert split["steal"] == 0.0
    assert steady_cpu(None, done, rate) is None and steady_cpu(timeline, done, None) is None
    row = {**COMPLETE_ROW, "backend": "ray", "steady_cpu_ms_per_call": split}
    assert "| 0.83 / 16.67 / 3.33 / 0.33 / 0.00 |" in bench.markdown([row])


def test_scaling_compares_each_ray_row_with_one_worker() -> None:
    def row(stack: str, backend: str, workers: int, rate: float | None) -> dict[str, Any]:
        return {
            "stack": stack,
            "backend": backend,
            "workers": workers,
            "concurrency": 8,
            "episodes": 40,
            "steady_calls_per_s": rate,
        }

    rows = add_scaling(
        [
            row("direct", "local", 0, 500.0),
            row("direct ray x1", "ray", 1, 400.0),
            row("direct ray x2", "ray", 2, 640.0),
            row("litellm ray x2", "ray", 2, 100.0),  # no one-worker row to compare with
        ]
    )
    assert [r.get("scaling") for r in rows] == [None, 1.0, 1.6, None]
    assert rows[2]["efficiency"] == pytest.approx(0.8)
    assert "1.60x (80 %)" in bench.markdown([{**COMPLETE_ROW, **rows[2]}])


def test_rounds_compare_within_a_round_and_report_the_median_round() -> None:
    def row(workers: int, rate: float, round_: int) -> dict[str, Any]:
        stack = f"direct ray x{workers}"
        return {
            **COMPLETE_ROW,
            "stack": stack,
            "backend": "ray",
            "workers": workers,
            "steady_calls_per_s": rate,
            "steady_cpu_ms_per_call": {**dict.fromkeys(KINDS, 0.0), "workers": 1000 / rate},
            "round": round_,
        }

    # The machine drifts: round 1 is slow for both rows, round 2 fast for both.
    rounds = [(1000.0, 1600.0), (800.0, 1360.0), (1200.0, 1800.0)]
    rows = [
        row(n, rate, i)
        for i, pair in enumerate(rounds)
        for n, rate in zip((1, 2), pair, strict=True)
    ]
    out = collapse(add_scaling(rows))
    assert [(r["stack"], r["rounds"]) for r in out] == [("direct ray x1", 3), ("direct ray x2", 3)]
    two = out[1]
    assert two["scaling_rounds"] == pytest.approx([1.6, 1.7, 1.5])
    assert two["scaling"] == pytest.approx(1.6) and two["efficiency"] == pytest.approx(0.8)
    assert two["steady_calls_per_s"] == 1600.0  # the median round's own figures
    assert two["calls_per_s_rounds"] == [1600.0, 1360.0, 1800.0]
    # every round's steady CPU, in round order
    assert [r["workers"] for r in two["steady_cpu_ms_per_call_rounds"]] == pytest.approx(
        [1000 / 1600, 1000 / 1360, 1000 / 1800]
    )
    assert "1.60x (80 %), rounds 1.50-1.70" in bench.markdown(out)
    assert collapse([COMPLETE_ROW]) == [COMPLETE_ROW]  # one round: the row as measured
    with pytest.raises(ValueError, match="--rounds"):
        bench.run_runner_benchmark([(1, 1)], rounds=0)


def test_each_round_estimates_the_scaling_with_the_model_elsewhere() -> None:
    def row(workers: int, rate: float, server: float, round_: int) -> dict[str, Any]:
        split = {"driver": 0.1, "workers": 1.0, "server": server, "ray": 0.1, "steal": 0.5}
        return {
            **COMPLETE_ROW,
            "stack": f"direct ray x{workers}",
            "backend": "ray",
            "workers": workers,
            "steady_calls_per_s": rate,
            "steady_cpu_ms_per_call": split,
            "round": round_,
        }

    # x2's CPU per call, 1.4 ms with the fake server's 0.2 (1.2 without), 1.3 with 0.1
    rows = [row(1, 1000.0, 0.2, 0), row(2, 1500.0, 0.2, 0)]
    rows += [row(1, 1000.0, 0.1, 1), row(2, 1400.0, 0.1, 1)]
    rows += [row(1, 1000.0, 0.3, 2), {**row(2, 1600.0, 0.3, 2), "steady_cpu_ms_per_call": None}]
    out = collapse(add_scaling(rows))
    two = out[1]
    assert two["scaling_rounds"] == pytest.approx([1.5, 1.4, 1.6])
    # the steal is not the row's CPU; a round without a steady split gives no estimate
    assert two["scaling_model_elsewhere_rounds"] == pytest.approx(
        [1.5 * 1.4 / 1.2, 1.4 * 1.3 / 1.2]
    )
    assert two["scaling_model_elsewhere"] == pytest.approx((1.75 + 1.4 * 1.3 / 1.2) / 2)
    assert "scaling_model_elsewhere" not in out[0]  # the one-worker row is the base
    assert bench.scaling_lines(out)[0].endswith(
        "; with the fake model's CPU elsewhere about 1.63x (rounds 1.75 / 1.52)"
    )


def test_the_machine_ceiling_goes_with_the_multi_worker_rows() -> None:
    figure = parallel_ceiling(2, rounds=2, seconds=0.2)
    assert figure["processes"] == 2 and len(figure["ratios"]) == 2
    # Work was done and compared (loose bounds: on a shared, loaded machine two busy
    # processes may do no more than one; the figure itself is what the benchmark reports).
    assert all(0.2 < ratio < 4.0 for ratio in figure["ratios"])
    # the middle of the two (approx: `a + (b - a) / 2` and `(a + b) / 2` differ in the last
    # bit for ~9 % of pairs, which failed this test now and then)
    assert figure["median"] == pytest.approx(sum(figure["ratios"]) / 2)
    rows = [
        {**COMPLETE_ROW, "backend": "ray", "workers": 1, "scaling": 1.0, "efficiency": 1.0},
        {**COMPLETE_ROW, "backend": "ray", "workers": 2, "scaling": 1.5, "efficiency": 0.75},
        {**COMPLETE_ROW, "backend": "local", "workers": 0},
    ]
    add_ceiling(rows, measure=lambda n: {"median": 1.7, "ratios": [1.6, 1.7, 1.8]})
    assert [r.get("machine_ceiling") for r in rows] == [None, 1.7, None]
    assert "1.50x (75 %); machine 1.70x" in bench.markdown(rows)


def test_the_printed_table_cuts_no_figure_and_each_round_is_listed_under_it() -> None:
    import io

    from tau_bench import terminal

    row = {
        **COMPLETE_ROW,
        "stack": "direct ray x2",
        "backend": "ray",
        "workers": 2,
        "concurrency": 200,
        "episodes": 4000,
        "steady_calls_per_s": 1276.0,
        "scaling": 1.41,
        "efficiency": 0.705,
        "scaling_rounds": [1.34, 1.65, 1.41, 1.53, 1.38],
        "machine_ceiling": 2.0,
        "machine_ceiling_rounds": [1.98, 2.0, 2.03],
        "driver_cpu_ms_per_call": 0.16,
        "workers_cpu_ms_per_call": 1.2,
        "server_cpu_ms_per_call": 0.21,
        "ray_cpu_ms_per_call": 0.06,
        "steady_cpu_ms_per_call": {
            "driver": 0.08,
            "workers": 1.19,
            "server": 0.21,
            "ray": 0.04,
            "steal": 0.0,
        },
        "busy_cores": 1.93,
    }
    console = terminal.console(width=200, file=io.StringIO(), record=True)
    console.print(bench.render([row], 0.05))  # as `tau bench runner` prints it
    text = console.export_text()
    assert "\u2026" not in text  # no cell or heading ends in an ellipsis
    # every character of the scaling cell is in the table, folded or not
    column = [name for name, _ in bench.COLUMNS].index("vs ray x1")
    body = [
        line.split("\u2502")[column + 1].strip() for line in text.splitlines() if "\u2502" in line
    ]
    assert "".join(body).replace(" ", "") == "1.41x(70%),rounds1.34-1.65;machine2.00x"
    assert bench.scaling_lines([{**row, "workers": 1, "scaling": 1.0}, row]) == [
        "direct ray x2 at 200:4000: 1.41x the steady calls/s of ray x1 (70 % efficiency), "
        "median of rounds 1.34 / 1.65 / 1.41 / 1.53 / 1.38; "
        "machine ceiling 2.00x (rounds 1.98 / 2.00 / 2.03)"
    ]
    drifted = {**row, "machine_ceiling": 2.71, "machine_ceiling_rounds": [2.75, 2.71, 2.34]}
    assert bench.scaling_lines([drifted])[0].endswith(
        "machine ceiling 2.71x (rounds 2.75 / 2.71 / 2.34), above 2 processes' worth: the "
        "host's speed changed between its one- and many-process parts, so it bounds nothing"
    )


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


@pytest.mark.parametrize(
    "levels",
    ["1000001:1", "1:1000001", ",".join(["1:1"] * 101)],
    ids=["concurrency", "episodes", "levels"],
)
def test_levels_are_bounded(levels: str) -> None:
    with pytest.raises(ValueError, match="at most"):
        bench.parse_levels(levels)
    assert bench.parse_levels("1000000:1000000") == [(1_000_000, 1_000_000)]


def test_worker_counts_are_bounded() -> None:
    with pytest.raises(ValueError, match="at most 100 counts of at most 4,096"):
        bench.parse_workers("1,4097")
    assert bench.parse_workers("4096") == (4096,)


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


def test_completions_sample_once_when_the_last_planned_episode_is_stored() -> None:
    """Ray's workers exit with the run: the CPU sample that still sees them is the one
    taken as the last episode is stored (a resumed run counts the episodes it had)."""
    samples: list[int] = []
    done = Completions(at_last_episode=lambda: samples.append(len(done.times)))
    done.started(5, ["resumed", "resumed"])
    for _ in range(3):
        done.episode_done(object())
    assert samples == [3] and len(done.times) == 3
