"""A task whose initial state cannot be applied is that task's error, not a crash.

`tau tasks verify --tasks-file` and `tau sdg stats` replay every task: one with an
unknown env function, a history the original rejects, data its DB model refuses or
nesting too deep to copy must show as an error row while the other tasks are still
verified (through the installed `tau` console script)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.tau_bench.tau3.conftest import require_data

TAU = Path(sys.executable).with_name("tau")
DEPTH = 940  # the task file reader takes it; copying it exceeds the recursion limit


@pytest.fixture(scope="module")
def data_root() -> Path:
    return require_data()


def _tau(args: list[str], data_root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TAU3_BENCH_DATA": str(data_root), "COLUMNS": "300"}
    return subprocess.run([str(TAU), *args], capture_output=True, text=True, env=env, timeout=300)


DEEP = "@deep@"  # replaced by the nested JSON text (json.dumps would recurse too deep)


def _write(path: Path, tasks: list[dict[str, Any]]) -> Path:
    nested = '{"a": ' * DEPTH + "{}" + "}" * DEPTH
    path.write_text(json.dumps(tasks).replace(json.dumps(DEEP), nested))
    return path


def _bad_tasks(data_root: Path) -> list[dict[str, Any]]:
    """Telecom's first task as is, then five copies whose initial state cannot apply."""
    good = json.loads((data_root / "data/tau2/domains/telecom/tasks_small.json").read_text())[0]
    good["id"] = "good"
    out = [good]
    for name in ("unknown_func", "tool_first", "bad_db", "deep", "nameless_call"):
        task = copy.deepcopy(good)
        task["id"] = name
        out.append(task)
    state = out[1]["initial_state"]
    state["initialization_actions"] = [{"env_type": "user", "func_name": "nope", "arguments": {}}]
    out[2]["initial_state"]["message_history"] = [{"role": "tool", "content": "x", "id": "1"}]
    out[3]["initial_state"]["initialization_data"] = {"agent_data": {"customers": 5}}
    out[4]["initial_state"]["initialization_data"] = {"agent_data": {"x": DEEP}}
    nameless = {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]}
    out[5]["initial_state"]["message_history"] = [nameless]
    return out


def test_verify_reports_each_bad_initial_state_as_an_error_row(
    data_root: Path, tmp_path: Path
) -> None:
    path = _write(tmp_path / "tasks.json", _bad_tasks(data_root))
    done = _tau(["tasks", "verify", "--env", "tau3/telecom", "--tasks-file", str(path)], data_root)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert done.returncode == 1, done.stderr  # as for any failing task
    assert "tau3/telecom: 1/6 tasks score 1.0" in done.stdout
    assert "5 FAILED" in done.stdout
    out = " ".join(done.stdout.split())
    for why in (
        "AttributeError",
        "ValueError: Tool message not expected",
        "ValidationError",
        "RecursionError",
        "ValueError: message_history: 0.participant.tool_calls.0.name: Field required",
    ):
        assert f"error: initial state: {why}" in out


def test_sdg_stats_reports_a_bad_initial_state_as_unverified(
    data_root: Path, tmp_path: Path
) -> None:
    path = _write(tmp_path / "tasks.json", _bad_tasks(data_root)[:2])
    done = _tau(["sdg", "stats", str(path), "--env", "tau3/telecom", "--json"], data_root)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    report = json.loads(done.stdout)
    verification = report["verification"]
    assert verification["checked"] == 2 and verification["failed"] == [1]
    problems = verification["problems"]["1"]["problems"]
    assert any("initial state: AttributeError" in p for p in problems), problems


def test_sdg_stats_does_not_call_a_task_never_replayed_unchanged(
    data_root: Path, tmp_path: Path
) -> None:
    """A retail task (DB in its reward basis) whose initial state cannot apply is
    unverified, not also "leaves the DB unchanged": nothing was replayed to compare."""
    task = json.loads((data_root / "data/tau2/domains/retail/tasks.json").read_text())[0]
    assert "DB" in task["evaluation_criteria"]["reward_basis"]
    task["initial_state"] = {"initialization_data": {"agent_data": {"users": 5}}}
    path = _write(tmp_path / "tasks.json", [task])
    done = _tau(["sdg", "stats", str(path), "--env", "tau3/retail", "--json"], data_root)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    problems = json.loads(done.stdout)["verification"]["problems"]["0"]["problems"]
    assert any("initial state:" in p for p in problems), problems
    assert not any("unchanged" in p for p in problems), problems
