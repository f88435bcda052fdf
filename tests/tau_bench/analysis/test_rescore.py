"""Rescoring: replaying recorded trajectories on the current domain."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tau_bench.analysis.loading import LOG, TAU_BENCH, Run, load_run
from tau_bench.analysis.rescore import RescoreError, rescore_run, write_rescored
from tau_bench.domains import Domain, load_domain
from tau_bench.records import EpisodeRecord
from tau_bench.results_log import read_log
from tests.conftest import DATA_DIR
from tests.tau_bench.analysis.conftest import HISTORICAL, Runs


@pytest.fixture(scope="module")
def airline() -> Domain:
    return load_domain("airline", DATA_DIR)


def _call(i: int, name: str, args: Any) -> dict[str, Any]:
    return {
        "id": f"call_{i}",
        "type": "function",
        "function": {
            "name": name,
            "arguments": args if isinstance(args, str) else json.dumps(args),
        },
    }


def _run(records: list[EpisodeRecord], fmt: str = TAU_BENCH, **kw: Any) -> Run:
    return Run(
        label="t", path=Path("t.json"), source_format=fmt, records=records, env="airline", **kw
    )


def _record(messages: list[dict[str, Any]], task_id: int = 0, **kw: Any) -> EpisodeRecord:
    base: dict[str, Any] = dict(
        reward=0.0, reward_info={"reward": 0.0, "r_actions": 0.0}, messages=messages
    )
    base.update(kw)
    return EpisodeRecord(task_id=task_id, trial=0, **base)


def _gt(airline: Domain, task_id: int = 0) -> list[tuple[str, dict[str, Any]]]:
    return [(a.name, a.kwargs) for a in airline.tasks("test")[task_id].actions]


def test_historical_unfinished_episodes_keep_their_zero(airline: Domain) -> None:
    run = load_run(HISTORICAL)
    result = rescore_run(run, airline)
    summary = result.summary()
    assert (summary["rescored"], summary["skipped"], summary["changed"]) == (195, 5, 0)
    assert summary["avg_reward"] == {"before": 0.42, "after": 0.42}
    assert summary["multi_call_messages"] == 0
    assert summary["observation_changes"] > 0  # the data moved on (e.g. province -> state)
    scored = rescore_run(run, airline, score_unfinished=True)
    changes = {(c["task_id"], c["trial"]): c for c in scored.summary()["changes"]}
    assert set(changes) == {(2, 1), (46, 3)}
    assert changes[(46, 3)]["why"] == "the original never scored it (unfinished)"
    assert scored.summary()["avg_reward"]["after"] == pytest.approx(0.43)


def test_a_stale_log_is_corrected_and_written_back_as_a_log(
    runs: Runs, tmp_path: Path, airline: Domain
) -> None:
    run = load_run(runs.oracle)
    stale = copy.deepcopy(run)
    for r in stale.records:  # as if scored against a broken task before its fix
        if r.task_id == 0:
            r.reward, r.reward_info = 0.0, {**(r.reward_info or {}), "r_actions": 0.0}
    result = rescore_run(stale, airline)
    changed = {(e.task_id, e.trial) for e in result.changed}
    assert changed == {(0, 0), (0, 1)}
    assert {e.why() for e in result.changed} == {"database now matches"}
    out = write_rescored(result, tmp_path / "fixed.jsonl")
    contents = read_log(out)
    assert contents.header["rescored"]["changed"] == 2
    assert contents.header["run_name"] == "oracle"
    assert all(r.reward == 1.0 for r in contents.records.values())
    assert load_run(out).source_format == LOG


def test_a_tampered_trajectory_fails_with_a_diff(runs: Runs, airline: Domain) -> None:
    run = copy.deepcopy(load_run(runs.oracle))
    record = next(r for r in run.records if r.task_id == 0)
    record.messages = [
        m
        for m in record.messages
        if not any(c["function"]["name"] == "book_reservation" for c in m.get("tool_calls") or [])
    ]
    result = rescore_run(_run([record], LOG), airline)
    (episode,) = result.changed
    assert (episode.old_reward, episode.new_reward) == (1.0, 0.0)
    assert (result.records[0].reward_info or {})["db_diff"]


def test_every_tool_call_of_a_message_runs_in_order(airline: Domain) -> None:
    """The original ran only the first call of a message; rescore runs all of them."""
    calls = [_call(i, name, args) for i, (name, args) in enumerate(_gt(airline, 0))]
    calls.insert(0, _call(9, "get_user_details", {"user_id": "mia_li_3668"}))
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "book it"},
        {"role": "assistant", "content": None, "tool_calls": calls},
    ]
    result = rescore_run(_run([_record(messages)]), airline)
    (episode,) = result.episodes
    assert episode.new_reward == 1.0 and episode.stats.tool_calls == 2
    assert episode.stats.multi_call_messages == 1
    assert "all replayed; the original ran only the first" in episode.notes[0]


def test_replies_feed_the_outputs_check(airline: Domain) -> None:
    task_id = next(
        i
        for i, t in enumerate(airline.tasks("test"))
        if t.outputs
        and not [
            a
            for a in t.actions
            if a.name not in ("respond",)
            and not a.name.startswith(("get_", "search_", "list_", "calculate", "think"))
        ]
    )
    task = airline.tasks("test")[task_id]
    said = {"role": "assistant", "content": "The answer: " + " and ".join(task.outputs)}
    silent = {"role": "assistant", "content": "I cannot tell."}
    result = rescore_run(
        _run([_record([said], task_id), _record([silent], task_id, reward=1.0)]), airline
    )
    assert [e.new_reward for e in result.episodes] == [1.0, 0.0]
    assert result.episodes[0].stats.replies == 1


def test_text_actions_of_the_original_react_agent(airline: Domain) -> None:
    ((name, args),) = _gt(airline, 0)
    messages = [
        {"role": "user", "content": "book it"},
        {
            "role": "assistant",
            "content": f"Thought:\nbook\nAction:\n{json.dumps({'name': name, 'arguments': args})}",
        },
        {"role": "user", "content": "API output: ..."},
        {"role": "assistant", "content": "Thought:\ndone\nAction:\nnot json, a reply"},
    ]
    (episode,) = rescore_run(_run([_record(messages)]), airline).episodes
    assert episode.stats.text_actions and episode.new_reward == 1.0
    assert (episode.stats.tool_calls, episode.stats.replies) == (1, 1)


def test_replay_stops_at_a_terminate_tool(airline: Domain) -> None:
    calls = [_call(0, "transfer_to_human_agents", {"summary": "x"})]
    calls += [_call(i + 1, n, a) for i, (n, a) in enumerate(_gt(airline, 0))]
    messages: list[dict[str, Any]] = [{"role": "assistant", "content": None, "tool_calls": calls}]
    (episode,) = rescore_run(_run([_record(messages)]), airline).episodes
    assert episode.stats.tool_calls == 1 and episode.new_reward == 0.0


def test_bad_arguments_and_changed_observations(airline: Domain) -> None:
    messages: list[dict[str, Any]] = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                _call(1, "get_user_details", "{not json"),
                _call(2, "get_user_details", {"user_id": "mia_li_3668"}),
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "name": "get_user_details", "content": "?"},
        {"role": "tool", "tool_call_id": "call_2", "name": "get_user_details", "content": "old"},
    ]
    (episode,) = rescore_run(_run([_record(messages)]), airline).episodes
    assert episode.stats.tool_calls == 2 and episode.stats.observation_changes == 2
    assert episode.new_reward == 0.0  # task 0 needs a booking


def test_skips_and_task_sources(airline: Domain) -> None:
    errored = _record([], reward=None, error={"kind": "x", "message": "boom"})
    out_of_range = _record([], task_id=999)
    other_user = _record([], task={"user_id": "someone_else", "instruction": "i"})
    result = rescore_run(_run([errored, out_of_range, other_user]), airline)
    skipped = [e.skipped for e in result.episodes]
    assert skipped[0] == "errored episode (never scored)"
    assert skipped[1] == "task 999 is not in airline test (50 tasks)"
    assert skipped[2] is None
    assert "recorded task is for user someone_else" in result.episodes[2].notes[0]

    # --recorded-tasks: the task stored in the record is the truth
    own = airline.tasks("test")[5].model_dump()
    record = _record([], task_id=999, task={**own, "actions": []})
    (episode,) = rescore_run(_run([record]), airline, recorded_tasks=True).episodes
    assert episode.skipped is None and episode.new_reward == 1.0  # nothing to do, nothing done
    bad = _record([], task={})
    (episode,) = rescore_run(_run([bad]), airline, recorded_tasks=True).episodes
    assert episode.skipped == "no usable task stored in the record"


def test_wrong_domain_is_refused(airline: Domain) -> None:
    run = _run([])
    run.env = "retail"
    with pytest.raises(RescoreError, match="retail results"):
        rescore_run(run, airline)


def test_tau_bench_output_keeps_unknown_keys(tmp_path: Path, airline: Domain) -> None:
    entries = [
        {
            "task_id": 0,
            "reward": 1.0,
            "trial": 0,
            "custom": "kept",
            "info": {
                "task": {"user_id": "mia_li_3668"},
                "reward_info": {"r_actions": 1.0},
                "source": "user",
                "user_cost": 0.5,
            },
            "traj": [{"role": "user", "content": "hi"}],
        },
        {"task_id": 1, "reward": 0.0, "trial": 0, "info": {"error": "boom"}, "traj": []},
    ]
    src = tmp_path / "in.json"
    src.write_text(json.dumps(entries))
    result = rescore_run(load_run(src), airline)
    out = write_rescored(result, tmp_path / "out.json")
    data = json.loads(out.read_text())
    assert data[0]["custom"] == "kept" and data[0]["info"]["source"] == "user"
    assert data[0]["reward"] == 0.0 and data[0]["info"]["rescored"]["previous_reward"] == 1.0
    assert data[0]["info"]["task"]["instruction"].startswith("Your user id is mia_li_3668")
    assert data[1] == entries[1]
