"""The τ³ suite behind the seam: domains, splits, episodes with the oracle, rewards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tau_adapters.registry import build_provider
from tau_bench.episode import run_task
from tau_bench.suites import load_domain
from tau_bench.suites.tau3 import Tau3Domain
from tau_bench.suites.tau3_env import MAX_ERRORS
from tau_bench.tau3.judge import AssumeMetJudge
from tau_bench.users import build_user


def _conformance(root: Path, domain: str) -> dict[str, dict]:
    lines = (root / "conformance" / f"{domain}.jsonl").read_text().splitlines()
    return {r["task_id"]: r for r in map(json.loads, lines)}


def test_domain_seam(data_root: Path) -> None:
    domain = load_domain("tau3/airline", data_root)
    assert isinstance(domain, Tau3Domain)
    assert (domain.name, domain.suite, domain.default_split) == ("tau3/airline", "tau3", "base")
    assert domain.tool_schemas == json.loads((data_root / "airline/tools.json").read_text())
    assert set(domain.splits) == {"base", "train", "test"}
    assert [len(domain.tasks(s)) for s in ("base", "train", "test")] == [50, 30, 20]
    assert domain.tasks() is domain.tasks("base")
    assert domain.terminate_tools == frozenset()
    assert domain.data_version()["commit"].startswith("a2c0247")
    with pytest.raises(ValueError, match="available: "):
        domain.tasks("dev")


def test_new_env_applies_initial_state(data_root: Path) -> None:
    domain = load_domain("tau3/mock", data_root)
    vectors = _conformance(data_root, "mock")
    for task in domain.tasks():
        env = domain.new_env(task)
        want = vectors[task.id]["initial_hashes"]
        assert (env.data_hash(), env.user_data_hash()) == (
            want["agent_db_hash"],
            want["user_db_hash"],
        ), task.id


def test_execute_flags_errors_and_stops_after_max_errors(data_root: Path) -> None:
    env = load_domain("tau3/mock", data_root).new_env()
    out = env.execute("create_task", {"user_id": "user_1", "title": "T"})
    assert not out.is_error and '"task_id": "task_2"' in out.content
    for _ in range(MAX_ERRORS - 1):
        assert env.execute("no_such_tool", {}).content == "Error: Tool 'no_such_tool' not found."
        assert not env.is_terminate("no_such_tool")
    assert env.execute("no_such_tool", {}).is_error
    assert env.is_terminate("create_task")  # the original's max_errors: too_many_errors
    env.finish("terminate_tool", None)
    assert env.termination == "too_many_errors"


async def _oracle_episode(domain: Tau3Domain, index: int):  # type: ignore[no-untyped-def]
    task = domain.tasks()[index]
    agent = build_provider("oracle", {}).new_adapter()
    return await run_task(domain, task, index, agent, build_user("scripted"))


async def test_oracle_scores_like_the_original(data_root: Path) -> None:
    domain = load_domain("tau3/mock", data_root).with_judge(AssumeMetJudge())
    vectors = _conformance(data_root, "mock")
    for i, task in enumerate(domain.tasks()):
        episode = await _oracle_episode(domain, i)
        assert episode.result.error is None
        assert episode.result.stop_reason == "agent_end"
        reward = episode.reward
        assert reward is not None
        assert reward.reward == vectors[task.id]["evaluation"]["reward"], task.id
        record = reward.to_dict()
        assert record["termination_reason"] == "agent_stop"
        if reward.reward == 0.0:
            assert record["failures"] and "env assertion failed" in record["failure_report"]


async def test_retail_oracle_with_assume_met_says_so(data_root: Path) -> None:
    domain = load_domain("tau3/retail", data_root).with_judge(AssumeMetJudge())
    episode = await _oracle_episode(domain, 0)
    assert episode.reward is not None and episode.reward.reward == 1.0
    info = episode.reward.to_dict()
    assert info["judge"] == "assume-met" and info["nl_assumed_met"] is True
    assert all("assumed met" in c["justification"] for c in info["reward_info"]["nl_assertions"])
    assert info["components"]["NL_ASSERTION"] == 1.0


async def test_failure_diff_names_the_differing_records(data_root: Path) -> None:
    domain = load_domain("tau3/airline", data_root).with_judge(AssumeMetJudge())
    task = next(t for t in domain.tasks() if any(a.name.startswith("cancel") for a in t.actions))
    env = domain.new_env(task)
    env.respond("Hello")
    env.finish("user_stop", None)
    reward = env.reward()
    assert reward.reward == 0.0
    text = reward.to_dict()["failure_report"]
    assert "DB differs from gold" in text and "action not performed: cancel" in text


def test_trajectory_rebuilt_from_the_conversation(data_root: Path) -> None:
    domain = load_domain("tau3/mock", data_root)
    env = domain.new_env(domain.tasks()[0])
    env.execute("create_task", {"user_id": "user_1", "title": "Important Meeting"})
    messages = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "please"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c9", "function": {"name": "create_task", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c9", "content": "ignored"},
        {"role": "assistant", "content": "done"},
    ]
    env.finish("user_stop", messages)
    roles = [(m.role, m.content if m.role != "tool" else m.id) for m in env.trajectory]
    assert roles == [
        ("assistant", "Hi! How can I help you today?"),
        ("user", "please"),
        ("assistant", None),
        ("tool", "c9"),
        ("assistant", "done"),
    ]
    assert env.trajectory[2].tool_calls[0].arguments == {
        "user_id": "user_1",
        "title": "Important Meeting",
    }
    assert env.reward().reward == 1.0
