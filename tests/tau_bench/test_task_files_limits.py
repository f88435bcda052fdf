"""A tasks file is bounded like a data file (`MAX_FILE_SIZE`, refused by its size before
it is read) and holds each task id once: `read_task_records` and the installed `tau`
say so in one line, exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau_bench.data.files import MAX_FILE_SIZE
from tau_bench.task_files import read_task_records
from tau_bench.tasks import TaskFileError, load_tasks
from tests.tau_bench.tau3.conftest import tau3_data_root

TAU = Path(sys.executable).parent / "tau"


def _tau(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TAU3_BENCH_DATA": str(tau3_data_root())}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    return subprocess.run(
        [str(TAU), *map(str, args)], capture_output=True, text=True, timeout=300, env=env
    )


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: ")
    return line


@pytest.fixture
def sparse(tmp_path: Path) -> Path:
    """A file one byte over the cap that takes no disk (a hole)."""
    path = tmp_path / "big.json"
    with path.open("wb") as fh:
        fh.truncate(MAX_FILE_SIZE + 1)
    return path


def test_a_file_over_the_cap_is_refused_before_it_is_read(sparse: Path) -> None:
    """Was: read whole (a 3 GB sparse file: a MemoryError traceback under a memory limit)."""
    with pytest.raises(TaskFileError, match="too large for a tasks file"):
        read_task_records(sparse)


def test_tau_tasks_verify_with_a_huge_tasks_file_is_one_line(sparse: Path) -> None:
    line = _one_error_line(_tau("tasks", "verify", "--env", "tau3/airline", "--tasks-file", sparse))
    assert line == f"error: {sparse}: too large for a tasks file (more than 256 MiB)"


@pytest.fixture
def twice(tmp_path: Path) -> Path:
    """Airline task 5 listed twice."""
    tasks = json.loads((tau3_data_root() / "data/tau2/domains/airline/tasks.json").read_text())
    task = next(t for t in tasks if t["id"] == "5")
    path = tmp_path / "twice.json"
    path.write_text(json.dumps([task, task]))
    return path


@pytest.mark.parametrize(
    "command",
    [
        ("tasks", "verify", "--env", "tau3/airline"),
        (
            "run",
            "--env",
            "tau3/airline",
            "--agent-strategy",
            "oracle",
            "--user-strategy",
            "scripted",
            "--judge-model",
            "assume-met",
        ),
    ],
    ids=["verify", "run"],
)
def test_a_task_id_twice_is_refused(twice: Path, tmp_path: Path, command: tuple[str, ...]) -> None:
    """Was: accepted; the run scored the task twice under one id, and its export failed."""
    extra = ("--log-dir", tmp_path / "logs") if command[0] == "run" else ()
    line = _one_error_line(_tau(*command, "--tasks-file", twice, *extra))
    assert line == f"error: {twice}: tasks 0 and 1 have the same id '5'"
    assert not (tmp_path / "logs").exists()


def test_v1_tasks_have_no_ids_and_may_repeat(tmp_path: Path) -> None:
    """v1 tasks are named by their index: the same task twice is two tasks."""
    path = tmp_path / "v1.json"
    task = {"user_id": "u", "instruction": "i"}
    path.write_text(json.dumps([task, task]))
    assert len(load_tasks(path)) == 2
