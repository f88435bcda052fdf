"""τ³ domains mixed in one `tau eval` and one `TauBench-v0`, and the gym on τ³ retail:
the oracle's plan played by hand through the gym, the scripted user on the other side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium
import pytest

import tau_bench.gym  # noqa: F401  (registers TauBench-v0)
from tau_bench.agents.oracle import ask_user
from tau_bench.gym import TauBenchEnv
from tau_bench.suites import load_domain
from tests.tau_bench.tau3.conftest import require_data
from tests.tau_bench.tau3.tau3_runs import tau

MIXED = "tau3/retail,tau3/telecom"


def mixed_gym(**kw: Any) -> TauBenchEnv:
    require_data()
    options: dict[str, Any] = dict(
        domain=MIXED, split="base", user_strategy="scripted", judge_model="assume-met"
    )
    return TauBenchEnv(**{**options, **kw})


def play_the_plan(env: Any, task: Any) -> tuple[float, dict[str, Any]]:
    """The oracle's moves as gym actions: its tool calls, and a request for each run of
    the user's own actions; then a closing message the scripted user stops on."""
    plan, step = list(task.action_plan), 0
    while plan:
        if plan[0].requestor == "user":
            run = []
            while plan and plan[0].requestor == "user":
                run.append(plan.pop(0))
            _, reward, done, _, info = env.step(ask_user(run))
        else:
            action = plan.pop(0)
            step += 1
            call = {"id": f"gt_{step}", "name": action.name, "arguments": action.kwargs}
            _, reward, done, _, info = env.step(call)
        assert not done, info
    _, reward, done, _, info = env.step("That is all done.")
    assert done and info["stop_reason"] == "user_stop"
    return float(reward), info


def test_gym_resets_draw_from_both_domains_with_namespaced_ids() -> None:
    env = mixed_gym()
    seen = [env.reset(seed=s)[1] for s in range(16)]
    assert {i["domain"] for i in seen} == {"tau3/retail", "tau3/telecom"}
    for info in seen:
        name, _, index = info["task_id"].rpartition("/")
        assert name == info["domain"] and index.isdigit()
    user_tools = {t["function"]["name"] for t in load_domain("tau3/telecom").user_tool_schemas}
    for info in seen:  # the user's tools are never the agent's, in either domain
        assert not user_tools & {t["function"]["name"] for t in info["tools"]}
    again = [env.reset(seed=s)[1]["task_id"] for s in range(16)]
    assert again == [i["task_id"] for i in seen]
    env.close()


def test_gym_task_ids_and_reset_options_with_several_domains() -> None:
    env = mixed_gym(task_ids=["tau3/retail/1", "tau3/telecom/2"])
    drawn = {env.reset(seed=s)[1]["task_id"] for s in range(12)}
    assert drawn == {"tau3/retail/1", "tau3/telecom/2"}
    _, info = env.reset(options={"task_id": "tau3/telecom/5"})
    assert (info["domain"], info["task_id"]) == ("tau3/telecom", "tau3/telecom/5")
    _, info = env.reset(options={"domain": "tau3/retail", "task_id": 3})
    assert info["task_id"] == "tau3/retail/3"
    with pytest.raises(ValueError, match="ambiguous"):
        env.reset(options={"task_id": 3})
    with pytest.raises(ValueError, match="ambiguous"):
        mixed_gym(task_ids=[3])
    env.close()


def test_gym_plays_a_telecom_and_a_retail_task_of_a_mixed_env_to_reward_1() -> None:
    env = mixed_gym()
    for task_id in ("tau3/telecom/0", "tau3/retail/0"):
        env.reset(options={"task_id": task_id})
        reward, info = play_the_plan(env, env.task)
        assert reward == 1.0, info["reward_info"]
        sides = {
            (m["role"], c.get("requestor")) for m in env.messages for c in m.get("tool_calls") or []
        }
        # Telecom: the user's own calls are labelled; retail's user has no tools.
        assert (("user", "user") in sides) == task_id.startswith("tau3/telecom/")
    env.close()


def test_gym_agent_cannot_run_the_users_phone_tools() -> None:
    env = mixed_gym()
    env.reset(options={"task_id": "tau3/telecom/0"})
    obs, reward, done, _, _ = env.step(
        {"id": "c1", "name": "toggle_airplane_mode", "arguments": {}}
    )
    assert "not found" in obs.lower() and not done and reward == 0.0
    assert not any(m.get("requestor") == "user" for m in env.messages)
    env.close()


def test_taubench_v0_on_tau3_retail_scores_the_oracle_plan() -> None:
    require_data()
    env = gymnasium.make(
        "TauBench-v0", domain="tau3/retail", split="base", user_strategy="scripted",
        judge_model="assume-met",
    )  # fmt: skip
    _, info = env.reset(seed=0, options={"task_id": 0})
    assert info["task_id"] == 0 and info["domain"] == "tau3/retail"
    assert info["policy"] == load_domain("tau3/retail").policy
    reward, _ = play_the_plan(env, env.unwrapped.task)  # type: ignore[attr-defined]
    assert reward == 1.0
    env.reset(options={"task_id": 0})  # the wrong plan: nothing done
    _, reward, done, _, _ = env.step("That is all done.")
    assert done and reward == 0.0
    env.close()


def test_tau_eval_over_two_tau3_domains_with_two_user_models(tmp_path: Path) -> None:
    require_data()
    config = tmp_path / "eval.yaml"
    config.write_text(
        "name: mixed\n"
        f"env: {MIXED}\n"
        "agent-strategy: oracle\n"
        "user-strategy: scripted\n"
        "user-models: [sim-a, sim-b]\n"
        "num-samples: 1\n"
        'task-ids: "tau3/retail/0-1,tau3/telecom/0-1"\n'
        "judge-model: assume-met\n"
        f"log-dir: {tmp_path / 'out'}\n",
        encoding="utf-8",
    )
    tau("eval", "--config", config, "--quiet")
    report = json.loads((tmp_path / "out" / "mixed.eval.json").read_text())
    assert report["user_models"] == ["sim-a", "sim-b"]
    assert set(report["per_user_model"]) == {"sim-a", "sim-b"}
    assert report["overall"]["avg_reward"] == 1.0 and report["overall"]["errors"] == 0
    expected = ["tau3/retail/0", "tau3/retail/1", "tau3/telecom/0", "tau3/telecom/1"]
    for model in ("sim-a", "sim-b"):
        log = tmp_path / "out" / "mixed" / f"mixed__{model}.jsonl"
        rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        episodes = [r for r in rows if r.get("type") == "episode"]
        assert sorted(r["task_id"] for r in episodes) == expected
        assert all(r["reward"] == 1.0 for r in episodes)
        for r in episodes:
            users = [
                c for m in r["messages"] for c in m.get("tool_calls") or []
                if c.get("requestor") == "user"
            ]  # fmt: skip
            assert bool(users) == r["task_id"].startswith("tau3/telecom/")
    bad = tmp_path / "bad.yaml"
    bad.write_text("env: tau3/retail,tau3/hotel\nuser-models: [a]\n", encoding="utf-8")
    proc = tau("eval", "--config", bad, "--quiet", check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
