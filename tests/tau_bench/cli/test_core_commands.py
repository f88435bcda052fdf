"""`tau env exec`, `tau tasks list/show/verify`: the interfaces users and scripts rely on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tau_bench.cli.app import app

from ...conftest import DATA_DIR

runner = CliRunner()


def _tau(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The real console entry point in a subprocess: exit codes and stderr as users see them."""
    return subprocess.run(
        [sys.executable, "-m", "tau_bench.cli.app", *args, "--data-dir", str(DATA_DIR)],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def test_env_exec_runs_calls_and_resets() -> None:
    conformance = [
        json.loads(line)
        for line in (DATA_DIR / "conformance" / "airline_test.jsonl").read_text().splitlines()
    ]
    first_write = next(v for v in conformance if v["steps"])
    step = first_write["steps"][0]
    lines = [
        json.dumps(step["action"]),
        json.dumps({"reset": True}),
        json.dumps({"name": "get_user_details", "kwargs": {"user_id": "nobody"}}),
        json.dumps({"name": "no_such_tool", "kwargs": {}}),
    ]
    proc = _tau("env", "exec", "--env", "airline", stdin="\n".join(lines) + "\n")
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(out) == 3  # reset prints nothing
    assert out[0] == {"observation": step["observation"], "data_hash": step["data_hash_after"]}
    assert out[1] == {
        "observation": "Error: user not found",
        "data_hash": first_write["initial_data_hash"],
    }
    assert out[2]["observation"] == "Unknown action no_such_tool"


def test_env_exec_rejects_bad_input_cleanly() -> None:
    proc = _tau("env", "exec", "--env", "retail", stdin="not json\n")
    assert proc.returncode == 2
    assert "line 1: not JSON" in proc.stderr and "Traceback" not in proc.stderr
    proc = _tau("env", "exec", "--env", "space", stdin="")
    assert proc.returncode == 2 and "unknown env 'space'" in proc.stderr


def test_tasks_verify_passes_on_the_benchmark_and_fails_on_a_broken_task(tmp_path: Path) -> None:
    proc = _tau("tasks", "verify", "--env", "all")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all: 165/165 tasks score 1.0" in proc.stdout
    tasks = json.loads((DATA_DIR / "retail" / "tasks" / "dev.json").read_text())[:3]
    # An output with a comma can never be matched (commas are removed from the agent's
    # text only, spec Q8): the task is unsolvable and verify must say so.
    tasks[1]["outputs"] = ["1,093.34"]
    broken = tmp_path / "tasks.json"
    broken.write_text(json.dumps(tasks))
    proc = _tau("tasks", "verify", "--env", "retail", "--tasks-file", str(broken))
    assert proc.returncode == 1
    assert "2/3 tasks score 1.0" in proc.stdout


def test_tasks_list_and_show() -> None:
    result = runner.invoke(
        app,
        ["tasks", "list", "--env", "retail", "--task-split", "dev", "--data-dir", str(DATA_DIR)],
    )
    assert result.exit_code == 0
    assert "retail / dev: 20 tasks" in result.stdout
    result = runner.invoke(
        app, ["tasks", "show", "2", "--env", "airline", "--json", "--data-dir", str(DATA_DIR)]
    )
    assert result.exit_code == 0
    shown = json.loads(result.stdout)
    assert shown["outputs"] == ["23553"] and shown["actions"]
    proc = _tau("tasks", "show", "50", "--env", "airline")
    assert proc.returncode == 2 and "out of range" in proc.stderr
    proc = _tau("tasks", "list", "--env", "airline", "--task-split", "train")
    assert proc.returncode == 2 and "unknown task split 'train'" in proc.stderr


TAU = Path(sys.executable).parent / "tau"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["tasks", "verify", "--env", ","], "--env names no domain"),
        (["tasks", "verify", "--env", " "], "--env names no domain"),
        (["tasks", "list", "--env", "retail", "--width", "0"], "--width"),
        (["tasks", "list", "--env", "retail", "--width", "-5"], "--width"),
        (["tasks", "list", "--env", "retail", "--width", "19"], "--width"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_tasks_flags_without_a_usable_value_are_one_line_exit_2(
    args: list[str], needle: str
) -> None:
    done = subprocess.run(
        [str(TAU), *args, "--data-dir", str(DATA_DIR)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert "Traceback" not in done.stderr
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.lower().startswith("error:")]
    assert len(lines) == 1 and needle in lines[0], done.stderr
    assert done.stdout == ""


def test_tasks_list_at_the_narrowest_width() -> None:
    result = runner.invoke(
        app,
        ["tasks", "list", "--env", "retail", "--task-split", "dev", "--width", "20"],
        env={"TAU_BENCH_DATA": str(DATA_DIR), "COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "retail / dev: 20 tasks" in result.output
