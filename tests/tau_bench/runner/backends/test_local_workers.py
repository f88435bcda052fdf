"""A Ray started on this machine gets at most one worker per CPU: `--workers 200` on a
laptop (a typo for `--max-concurrency`) would start 200 Python processes. A local Ray
that cannot start (its temporary directory cannot be made) is one line too."""

from __future__ import annotations

import os
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


def tau_serve_refusal(tmp_path: Path, workers: int, env: dict[str, str] | None = None) -> str:
    """The stderr of `tau serve --backend ray --workers N` (state in tmp_path/state),
    after checking it exited with 2 at start-up and printed no traceback."""
    state = tmp_path / "state"
    argv = [str(TAU), "serve", "--no-auth", "--backend", "ray", "--workers", str(workers)]
    done = subprocess.run(
        [*argv, "--state-dir", str(state)],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
        env=env,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr


def test_tau_serve_refuses_them_at_start_up(tmp_path: Path) -> None:
    assert "a local Ray runs at most" in tau_serve_refusal(tmp_path, machine_cpus() + 1)
    assert not (tmp_path / "state").exists()


def _unusable_ray_tmpdir(tmp_path: Path) -> dict[str, str]:
    """This environment with Ray's temporary directory under a file (it cannot be made)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    return {**os.environ, "RAY_TMPDIR": str(blocker / "ray")}


def test_tau_run_says_in_one_line_that_a_local_ray_cannot_start(tmp_path: Path) -> None:
    error = tau_run_refusal(tmp_path, "--backend", "ray", env=_unusable_ray_tmpdir(tmp_path))
    assert error.startswith("error: --backend ray: cannot start or reach a local Ray: "), error
    assert str(tmp_path / "a-file") in error


def test_tau_serve_says_it_at_start_up(tmp_path: Path) -> None:
    stderr = tau_serve_refusal(tmp_path, 1, env=_unusable_ray_tmpdir(tmp_path))
    assert "error: --backend ray: cannot start or reach a local Ray: " in stderr
