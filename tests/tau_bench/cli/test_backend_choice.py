"""`--backend local` is a choice: with `--workers N` > 1 or a Ray address (each alone
means Ray) it is refused in one line, exit 2, whichever layer each came from, never
silently overridden. Through the installed console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ...conftest import DATA_DIR

TAU = Path(sys.executable).parent / "tau"
RUN = ["run", "--env", "airline", "--agent-strategy", "oracle", "--user-strategy", "scripted"]
REFUSED = "but {} asks for Ray: choose backend ray, or leave those out"


def _tau(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(
        [str(TAU), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )


def _refusal(done: subprocess.CompletedProcess[str], asks: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: backend local runs episodes in this process")
    assert REFUSED.format(asks) in done.stderr


@pytest.mark.parametrize(
    ("flags", "asks"),
    [
        (["--workers", "2"], "workers 2"),
        (["--ray-address", "ray://user:s3cret@head:10001"], "a Ray address"),
    ],
)
def test_tau_run_refuses_backend_local_with_a_ray_setting(
    flags: list[str], asks: str, tmp_path: Path
) -> None:
    done = _tau([*RUN, "--task-ids", "0", "--backend", "local", *flags], tmp_path)
    _refusal(done, asks)
    assert "s3cret" not in done.stderr
    assert not (tmp_path / "results").exists()


def test_the_command_lines_backend_meets_the_files_ray_address(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text("ray-address: 127.0.0.1:1\ntask-ids: [0]\n")
    done = _tau([*RUN, "--config", "run.yaml", "--backend", "local"], tmp_path)
    _refusal(done, "a Ray address")


def test_the_files_backend_meets_the_command_lines_workers(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text("backend: local\ntask-ids: [0]\n")
    done = _tau([*RUN, "--config", "run.yaml", "--workers", "2"], tmp_path)
    _refusal(done, "workers 2")


def test_tau_eval_refuses_it_too(tmp_path: Path) -> None:
    (tmp_path / "eval.yaml").write_text(
        "name: ev\nenv: airline\nagent-strategy: oracle\nuser-strategy: scripted\n"
        "user-models: [a, b]\ntask-ids: [0]\nbackend: local\n"
    )
    done = _tau(["eval", "--config", "eval.yaml", "--workers", "2"], tmp_path)
    _refusal(done, "workers 2")


def test_tau_serve_refuses_it_at_start_up(tmp_path: Path) -> None:
    argv = ["serve", "--no-auth", "--port", "0", "--state-dir", str(tmp_path / "state")]
    done = _tau([*argv, "--backend", "local", "--workers", "2"], tmp_path)
    _refusal(done, "workers 2")


def test_a_ray_run_resumes_locally_when_asked(tmp_path: Path) -> None:
    """The resumed run's `workers 2` is its own, no choice of this resume's: `--resume LOG
    --backend local` runs here (it was refused as a conflict the user never made)."""
    done = _tau([*RUN, "--task-ids", "0", "1", "--run-name", "r"], tmp_path)
    assert done.returncode == 0, done.stderr
    log = tmp_path / "results" / "r.jsonl"
    header, *records = log.read_text().splitlines()
    config = json.loads(header)
    config["config"].update(workers=2, backend="ray")  # as a `--workers 2` run wrote it
    log.write_text("\n".join([json.dumps(config), records[0]]) + "\n")

    resumed = _tau(["run", "--resume", str(log), "--backend", "local"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "Traceback" not in resumed.stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    tasks = sorted(line["task_id"] for line in lines if line["type"] == "episode")
    assert tasks == [0, 1]
    # asked again together with Ray's own setting, it is still refused
    _refusal(
        _tau(["run", "--resume", str(log), "--backend", "local", "--workers", "2"], tmp_path),
        "workers 2",
    )
