"""One scored episode: the oracle reaches 1.0; an episode cut off by max steps scores 0."""

from __future__ import annotations

from tau_bench.agents.oracle import OracleAgent
from tau_bench.episode import run_task
from tau_bench.users.scripted import ScriptedUser


async def test_oracle_scores_one_on_write_task(airline) -> None:  # type: ignore[no-untyped-def]
    task = airline.tasks("test")[0]
    ep = await run_task(airline, task, 0, OracleAgent(), ScriptedUser())
    assert ep.reward is not None
    assert ep.reward_value == 1.0
    assert ep.env.data_hash() != airline.base_db.data_hash  # the booking really happened


async def test_max_steps_scores_zero_like_the_original(retail) -> None:  # type: ignore[no-untyped-def]
    task_id = next(i for i, t in enumerate(retail.tasks("test")) if len(t.actions) >= 3)
    task = retail.tasks("test")[task_id]
    ep = await run_task(retail, task, task_id, OracleAgent(), ScriptedUser(), max_steps=1)
    assert ep.result.stop_reason == "max_steps"
    assert ep.reward is not None
    assert ep.reward.reward == 0.0 and ep.reward.unfinished
    assert ep.reward.to_dict()["unfinished"] is True


async def test_wrong_db_state_gives_diff(retail) -> None:  # type: ignore[no-untyped-def]
    from tau_bench.env import Env

    task = next(
        t for t in retail.tasks("test") if any(a.name == "cancel_pending_order" for a in t.actions)
    )
    env = Env(retail, task)
    result = env.reward()  # agent did nothing
    assert result.reward == 0.0 and result.r_actions == 0.0
    assert result.diff, "a failed episode explains which records differ"
    assert {d.table for d in result.diff} <= {"orders", "users", "products"}
