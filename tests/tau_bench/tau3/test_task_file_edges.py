"""`tau tasks verify --tasks-file` on task files a user may hand it by mistake.

An empty file verifies nothing: it is refused with one line (as `tau run --tasks-file`
and `tau sdg stats` refuse it), not reported "OK". A message history the original's
message model refuses (an unknown role, text that is not a string, tool arguments that
are not an object) is that task's `error: initial state` row, never a 1.0: the original
does not load such a task at all."""

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


@pytest.fixture(scope="module")
def data_root() -> Path:
    return require_data()


def _verify(path: Path, data_root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TAU3_BENCH_DATA": str(data_root), "COLUMNS": "300"}
    args = ["tasks", "verify", "--env", "tau3/airline", "--tasks-file", str(path)]
    return subprocess.run([str(TAU), *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("text", ["", "[]\n", '{"tasks": []}\n'])
def test_verify_refuses_a_tasks_file_with_no_tasks(
    text: str, data_root: Path, tmp_path: Path
) -> None:
    path = tmp_path / "tasks.json"
    path.write_text(text)
    done = _verify(path, data_root)
    assert done.returncode == 2, done.stdout
    assert done.stderr.strip() == f"error: tasks file {path} has no tasks"
    assert "OK" not in done.stdout


BAD_HISTORIES: dict[str, tuple[dict[str, Any], str]] = {
    "unknown_role": (
        {"role": "bogus", "content": "hi"},
        "0: role should be 'system', 'assistant', 'user' or 'tool'",
    ),
    "content_not_text": (
        {"role": "assistant", "content": 5},
        "0.participant.content: Input should be a valid string",
    ),
    "arguments_not_object": (
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "name": "get_user_details", "arguments": "zz"}],
        },
        "0.participant.tool_calls.0.arguments: Input should be a valid dictionary",
    ),
}


def test_verify_reports_a_history_the_original_refuses_as_an_error_row(
    data_root: Path, tmp_path: Path
) -> None:
    good = json.loads((data_root / "data/tau2/domains/airline/tasks.json").read_text())[0]
    tasks = [good]
    for name, (message, _) in BAD_HISTORIES.items():
        task = copy.deepcopy(good)
        task["id"] = name
        task["initial_state"] = {"message_history": [message]}
        tasks.append(task)
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(tasks))
    done = _verify(path, data_root)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert done.returncode == 1, done.stdout
    assert "tau3/airline: 1/4 tasks score 1.0" in done.stdout
    out = " ".join(done.stdout.split())
    for _, why in BAD_HISTORIES.values():
        assert f"error: initial state: ValueError: message_history: {why}" in out, out


def test_verify_with_an_llm_judge_on_a_copy_without_prompts_is_one_line(
    data_root: Path,
) -> None:
    """The offline copy has no judge prompts: a verification that needs the judge stops
    before the work with the line `tau run` gives, not one error row per task."""
    assert not (data_root / "prompts").exists()
    env = {**os.environ, "TAU3_BENCH_DATA": str(data_root), "COLUMNS": "300"}
    args = ["tasks", "verify", "--env", "tau3/retail", "--task-split", "test"]
    done = subprocess.run(
        [str(TAU), *args, "--judge-model", "openai/gpt-4o"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 2, done.stdout
    assert done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: the τ³ prompt 'nl_judge_system_prompt' is missing from")
    assert line.endswith("run `tau data pull --suite tau3`")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"user_scenario": None}, "user_scenario: Input should be a valid dictionary"),
        ({"user_scenario": {"persona": "calm"}}, "user_scenario: instructions: Field required"),
        (
            {"user_scenario": {"instructions": {"domain": "airline"}}},
            "user_scenario: instructions.object.reason_for_call: Field required",
        ),
        (
            {"evaluation_criteria": {"reward_basis": ["DB", "FOO"]}},
            "evaluation_criteria.reward_basis.1: Input should be 'DB', 'ENV_ASSERTION'",
        ),
    ],
)
def test_a_task_the_original_would_not_load_is_refused_when_it_loads(
    change: dict[str, Any], message: str, data_root: Path, tmp_path: Path
) -> None:
    """The original requires a user scenario with instructions, and reward components
    it knows; each was loaded, and a missing scenario could even score 1.0."""
    task = json.loads((data_root / "data/tau2/domains/airline/tasks.json").read_text())[0]
    task.update(change)
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([task]))
    done = _verify(path, data_root)
    assert done.returncode == 2, done.stdout
    assert done.stderr.startswith("error: ") and len(done.stderr.strip().splitlines()) == 1
    assert message in done.stderr, done.stderr
