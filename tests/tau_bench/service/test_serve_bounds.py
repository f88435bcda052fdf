"""What an operator starts `tau serve` with is bounded and checked before it serves: the
runs at once (`--max-runs`: at most 64 and at most `--max-unfinished-runs`; on a local
Ray, the worker processes of all of them), and the agents `--agent-configs` names must
exist. Each was accepted: `--workers 2 --max-runs 1000` sized a local Ray at 2,000 CPUs,
and a misspelt `agent_strategy` failed only when a request named it.

Through the installed `tau`, where operators meet it; nothing is served or written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau_bench.runner.backends import LOCAL_RAY_WORKERS_PER_CPU, machine_cpus
from tau_bench.service.settings import ServiceLimits, ServiceSettings

TAU = Path(sys.executable).parent / "tau"


def serve(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TAU_SERVE_STATE_DIR": str(tmp_path / "state")}
    env.pop("TAU_SERVE_TOKEN", None)
    done = subprocess.run(
        [str(TAU), "serve", "--no-auth", "--port", "0", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "state").exists()
    return done


def error_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def test_max_runs_has_an_upper_bound(tmp_path: Path) -> None:
    done = serve(tmp_path, "--max-runs", "1000", "--max-unfinished-runs", "5000")
    assert "Invalid value for '--max-runs'" in done.stderr
    done = serve(tmp_path, "--max-unfinished-runs", "1000000")
    assert "Invalid value for '--max-unfinished-runs'" in done.stderr


@pytest.mark.parametrize("renders", ["0", "65"])
def test_report_renders_at_once_are_bounded(tmp_path: Path, renders: str) -> None:
    done = serve(tmp_path, "--max-report-renders", renders)
    assert "Invalid value for '--max-report-renders'" in done.stderr


def test_max_runs_beyond_the_unfinished_runs_is_refused(tmp_path: Path) -> None:
    assert error_line(serve(tmp_path, "--max-runs", "60")) == (
        "error: --max-runs 60 is more than --max-unfinished-runs 50 (the runs the server "
        "holds queued or running): lower --max-runs, or raise --max-unfinished-runs"
    )


def test_a_local_ray_for_every_run_at_once_is_bounded(tmp_path: Path) -> None:
    cpus = machine_cpus()
    runs = LOCAL_RAY_WORKERS_PER_CPU + 1
    line = error_line(serve(tmp_path, "--workers", str(cpus), "--max-runs", str(runs)))
    assert line == (
        f"error: {runs} runs at once of {cpus} worker(s) each would start {runs * cpus} "
        f"worker processes on a local Ray; at most {LOCAL_RAY_WORKERS_PER_CPU * cpus} here "
        f"({LOCAL_RAY_WORKERS_PER_CPU} per CPU): run fewer at once, or join a cluster with "
        "--ray-address"
    )


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("agent_strategy: tool-callin", "agent_strategy: unknown agent strategy 'tool-callin'"),
        ("agent_strategy: oracle\nuser_strategy: scriptd", "user_strategy: unknown user strategy"),
    ],
)
def test_agent_configs_naming_no_strategy_stop_the_server(
    tmp_path: Path, entry: str, expected: str
) -> None:
    path = tmp_path / "agents.yaml"
    path.write_text("mine:\n  " + entry.replace("\n", "\n  ") + "\n")
    line = error_line(serve(tmp_path, "--agent-configs", str(path)))
    assert line.startswith(f"error: --agent-configs: mine: {expected}"), line


def test_the_settings_object_holds_the_same_bounds(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_runs must be 1-64 and at most max_unfinished_runs"):
        ServiceSettings(tmp_path, None, max_runs=3, limits=ServiceLimits(max_unfinished_runs=2))
    with pytest.raises(ValueError, match="max_unfinished_runs must be 1-10,000"):
        ServiceSettings(tmp_path, None, limits=ServiceLimits(max_unfinished_runs=10**6))
