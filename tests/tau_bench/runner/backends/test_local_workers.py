"""A Ray started on this machine gets at most one worker per CPU: `--workers 200` on a
laptop (a typo for `--max-concurrency`) would start 200 Python processes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tau_bench.config import RunConfigError
from tau_bench.runner.backends import check_local_workers, machine_cpus
from tests.tau_bench.runner.backends.refusal import DEADLINE, TAU, tau_run_refusal


def test_one_worker_per_cpu_passes_one_more_is_refused() -> None:
    check_local_workers(machine_cpus())
    with pytest.raises(RunConfigError, match=rf"at most {machine_cpus()} workers here"):
        check_local_workers(machine_cpus() + 1)


@pytest.mark.parametrize("where", [[], ["--ray-address", "local"]])
def test_tau_run_refuses_more_local_workers_than_cpus(tmp_path: Path, where: list[str]) -> None:
    error = tau_run_refusal(tmp_path, "--workers", str(machine_cpus() + 1), *where)
    assert "a local Ray runs at most" in error and "--ray-address" in error


def test_tau_serve_refuses_them_at_start_up(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            str(TAU),
            "serve",
            "--no-auth",
            "--backend",
            "ray",
            "--workers",
            str(machine_cpus() + 1),
            "--state-dir",
            str(tmp_path / "state"),
        ],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "a local Ray runs at most" in done.stderr
    assert not (tmp_path / "state").exists()
