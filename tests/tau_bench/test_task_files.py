"""Tasks files nested too deep for Python's decoder, and records that are not tasks at
all, are one `TaskFileError` line naming the file (and line): in `read_task_records`,
v1's `load_tasks` and the installed `tau run --tasks-file`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau_bench.task_files import read_task_records
from tau_bench.tasks import TaskFileError, load_tasks
from tests.conftest import DATA_DIR

DEEP = "[" * 100_000 + "]" * 100_000
TASK = '{"user_id": "u", "instruction": "i"}'


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (DEEP, "(nested too deep)"),  # a JSON array
        ('{"tasks": ' + DEEP + "}", "(nested too deep)"),  # one wrapped document
        (TASK + "\n" + DEEP + "\n", "(nested too deep at line 2)"),  # JSON lines
    ],
)
def test_deep_json_is_one_task_file_error(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "tasks.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TaskFileError) as caught:
        read_task_records(path)
    assert str(caught.value) == f"{path}: not valid JSON {where}"


def test_a_record_that_is_not_an_object_has_no_empty_field_path(tmp_path: Path) -> None:
    path = tmp_path / "tasks.json"
    path.write_text("[null]", encoding="utf-8")
    with pytest.raises(TaskFileError) as caught:
        load_tasks(path)
    assert str(caught.value) == (
        f"{path}: task 0: Input should be a valid dictionary or instance of Task"
    )
    path.write_text('[{"user_id": 5, "instruction": "i"}]', encoding="utf-8")
    with pytest.raises(TaskFileError, match=r"tasks.json: task 0: user_id: Input should be"):
        load_tasks(path)


def test_tau_run_tasks_file_too_deep_says_one_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(DEEP, encoding="utf-8")
    tau = Path(sys.executable).parent / "tau"
    proc = subprocess.run(
        [
            str(tau), "run", "--env", "airline", "--agent-strategy", "oracle",
            "--user-strategy", "scripted", "--tasks-file", str(path),
            "--data-dir", str(DATA_DIR), "--log-dir", str(tmp_path / "logs"),
        ],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [f"error: {path}: not valid JSON (nested too deep)"]
