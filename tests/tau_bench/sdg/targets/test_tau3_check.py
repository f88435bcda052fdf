"""The validation of τ³ tasks (`tau sdg stats --env tau3/...`, and the generator's last
guard): τ³'s own replay, plus the rules a generated task must meet."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tau_bench.sdg.targets.tau3_check import check_tasks, report
from tau_bench.suites import load_domain
from tau_bench.suites.tau3_env import Tau3Task
from tau_bench.tasks import TaskFileError
from tau_bench.tau3.tasks import Task
from tests.conftest import TAU3_DATA_DIR

MOCK_CREATE = {
    "id": "create",
    "user_scenario": {"instructions": "You want a task 'A' for user_1."},
    "evaluation_criteria": {
        "actions": [
            {
                "action_id": "c0",
                "name": "create_task",
                "arguments": {"user_id": "user_1", "title": "A"},
            }
        ],
        "reward_basis": ["DB"],
    },
}


def _task(data: dict[str, Any]) -> Tau3Task:
    return Tau3Task(Task.from_dict(data))


def _upstream(domain: Any, task_id: str) -> dict[str, Any]:
    return copy.deepcopy(domain.task_by_id(task_id)[1].task.raw)


@pytest.fixture(scope="module")
def retail() -> Any:
    return load_domain("tau3/retail", TAU3_DATA_DIR)


@pytest.fixture(scope="module")
def mock() -> Any:
    return load_domain("tau3/mock", TAU3_DATA_DIR)


def broken_retail(retail: Any) -> list[dict[str, Any]]:
    """[valid, a wrong argument (tool error), reads only with DB in the basis]."""
    valid = _upstream(retail, "0")  # an exchange: 5 actions, the DB changes
    wrong = copy.deepcopy(valid)
    wrong["id"] = "wrong-argument"
    wrong["evaluation_criteria"]["actions"][1]["arguments"]["order_id"] = "#W0000000"
    reads = copy.deepcopy(valid)
    reads["id"] = "reads-only"
    reads["evaluation_criteria"]["actions"] = reads["evaluation_criteria"]["actions"][:2]
    return [valid, wrong, reads]


def test_a_valid_task_passes_and_broken_ones_say_why(retail: Any) -> None:
    checks = check_tasks(retail, [_task(t) for t in broken_retail(retail)])
    valid, wrong, reads = checks
    assert valid.ok and valid.reward == 1.0
    assert [p.reason for p in wrong.problems] == ["tool_error"]
    assert wrong.problems[0].action == 1
    assert "get_order_details: Error: Order not found" in wrong.problems[0].describe()
    assert [p.reason for p in reads.problems] == ["no_change"] and reads.reward == 1.0
    out = report(checks)
    assert out["checked"] == 3 and out["passed"] == 1 and out["failed"] == [1, 2]
    assert out["by_reason"] == {"tool_error": 1, "no_change": 1}
    assert out["problems"]["2"]["id"] == "reads-only" and out["known_issues"] == {}


def test_a_task_its_replay_does_not_score_one_is_unverified(mock: Any) -> None:
    impossible = copy.deepcopy(MOCK_CREATE)
    impossible["evaluation_criteria"]["env_assertions"] = [
        {
            "env_type": "assistant",
            "func_name": "assert_number_of_tasks",
            "arguments": {"user_id": "user_1", "expected_number": 99},
        }
    ]
    impossible["evaluation_criteria"]["reward_basis"] = ["DB", "ENV_ASSERTION"]
    ok, bad = check_tasks(mock, [_task(MOCK_CREATE), _task(impossible)])
    assert ok.ok
    assert bad.reward == 0.0 and [p.reason for p in bad.problems] == ["unverified"]
    assert "scores 0.0" in bad.problems[0].message


def test_tasks_that_fail_in_the_original_are_known_issues(mock: Any) -> None:
    out = report(check_tasks(mock, mock.tasks()))
    assert out["checked"] == 10
    assert {e["id"] for e in out["known_issues"].values()} == {
        "update_task_with_user_tools",
        "update_task_with_history_and_env_assertions",
    }
    failing = {e["id"] for e in out["problems"].values()}
    assert failing == {"create_task_1_nl_eval", "impossible_task_1"}  # no DB change


def test_the_tau3_loader_reads_every_layout_and_fails_in_one_line(
    retail: Any, tmp_path: Path
) -> None:
    tasks = broken_retail(retail)
    array, wrapped, lines = tmp_path / "a.json", tmp_path / "w.json", tmp_path / "l.jsonl"
    array.write_text(json.dumps(tasks, indent=2))
    wrapped.write_text(json.dumps({"tasks": tasks}, indent=2))
    lines.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    ids = [[t.id for t in retail.load_tasks_file(p)] for p in (array, wrapped, lines)]
    assert ids == [["0", "wrong-argument", "reads-only"]] * 3

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(tasks[0]) + "\n{not json\n")
    with pytest.raises(TaskFileError, match=r"bad.jsonl: not valid JSON \(.* at line 2\)"):
        retail.load_tasks_file(bad)
    bad.write_text(json.dumps([{"user_scenario": {}}]))
    with pytest.raises(TaskFileError, match="task 0: id: Field required"):
        retail.load_tasks_file(bad)
    bad.write_text("[1]")
    with pytest.raises(TaskFileError, match="task 0: expected a JSON object"):
        retail.load_tasks_file(bad)
    with pytest.raises(TaskFileError, match="cannot read tasks file"):
        retail.load_tasks_file(tmp_path / "missing.json")
