"""Every record of `conformance/telecom.jsonl` (114 base + 20 small tasks), reproduced.

Per task: initial hashes; each expected action's tool message (exact content, error flag)
and both hashes after it; final hashes; the gold environment's hashes; and the evaluation
(reward, breakdown, db_check, env assertion `met` flags, action `action_match` flags and
tool types, communicate checks, info notes).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tau_bench.tau3.domain import LoadedDomain
from tau_bench.tau3.evaluator import gold_environment
from tau_bench.tau3.replay import replay_task
from tau_bench.tau3.tasks import Task, load_tasks
from tests.tau_bench.tau3.conftest import require_data


@cache
def _records() -> list[dict[str, Any]]:
    path = require_data() / "conformance" / "telecom.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@cache
def _tasks(root: Path) -> dict[str, Task]:
    return {t.id: t for t in load_tasks(root, "telecom", split="full")}


def test_vector_file_shape() -> None:
    records = _records()
    assert len(records) == 134
    assert [r["task_set"] for r in records] == ["base"] * 114 + ["small"] * 20
    gold_differs = sum(r["gold_hashes"] != r["final_hashes"] for r in records)
    assert gold_differs == 75


@pytest.mark.parametrize("index", range(134))
def test_task_conforms(index: int, root: Path, telecom: LoadedDomain) -> None:
    rec = _records()[index]
    task = _tasks(root)[rec["task_id"]]
    assert task.reward_basis == rec["reward_basis"]
    replay = replay_task(telecom, task)
    assert replay.error is None, replay.error
    assert replay.initial_hashes == rec["initial_hashes"]
    assert len(replay.steps) == len(rec["steps"])
    for step, want in zip(replay.steps, rec["steps"], strict=True):
        assert (step.call.name, step.call.requestor) == (want["name"], want["requestor"])
        assert step.result.content == want["content"], f"step {want['i']} {want['name']}"
        assert step.result.error == want["error"]
        assert step.hashes == {
            "agent_db_hash": want["agent_db_hash"],
            "user_db_hash": want["user_db_hash"],
        }, f"step {want['i']} {want['name']}"
    assert replay.final_hashes == rec["final_hashes"]
    assert replay.communicate_message == rec["communicate_message"]
    assert gold_environment(telecom, task).hashes() == rec["gold_hashes"]

    got = replay.evaluation
    assert got is not None
    # The whole RewardInfo (no NL assertions in telecom, so nothing was skipped).
    want = {k: v for k, v in rec["evaluation"].items() if k in got.to_dict()}
    assert got.to_dict() == want
    assert rec["evaluation"]["reward_if_nl_passes"] is None
