"""Telecom end to end: the oracle agent and the scripted user (which plays the task's
user-side actions on its phone) score what `tau tasks verify` scores, locally, through
the Dialogflow emulator and through the reference HTTP bot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tau_bench.agents.oracle import OracleAgent, ask_user
from tau_bench.episode import run_task
from tau_bench.suites import load_domain
from tau_bench.users.scripted import ScriptedUser
from tests.tau_bench.tau3.conftest import require_data
from tests.tau_bench.tau3.tau3_runs import tau


def episodes(log: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [r for r in lines if r.get("type") == "episode"]


def test_tau_run_telecom_oracle_scripted_scores_like_verify(tmp_path: Path) -> None:
    """The issue's exact command (no judge flag: telecom needs no NL judge, so no key)."""
    require_data()
    tau(
        "run", "--env", "tau3/telecom", "--agent-strategy", "oracle",
        "--user-strategy", "scripted", "--task-ids", "0-9", "--log-dir", tmp_path, "--quiet",
    )  # fmt: skip
    (log,) = tmp_path.glob("*.jsonl")
    records = episodes(log)
    assert sorted(r["task_id"] for r in records) == list(range(10))
    assert [r["reward"] for r in records] == [1.0] * 10
    verify = tau("tasks", "verify", "--env", "tau3/telecom")
    assert "114/114 tasks score 1.0" in verify.stdout
    for r in records:
        # Both sides' calls are labelled, and both final hashes are recorded.
        requestors = {c["requestor"] for m in r["messages"] for c in m.get("tool_calls") or []}
        assert "user" in requestors
        assert set(r["hashes"]) == {"agent", "user"} and all(r["hashes"].values())
        info = r["reward_info"]
        assert r["hashes"]["agent"] == info["predicted_hashes"].get("agent", r["hashes"]["agent"])


async def test_without_the_users_actions_telecom_tasks_fail() -> None:
    """The scores above come from the user's actions: a user that ignores requests fails."""
    require_data()
    domain: Any = load_domain("tau3/telecom")
    task = domain.tasks()[0]
    assert task.user_actions and ask_user(task.user_actions).count("\n") == len(task.user_actions)

    class Deaf(ScriptedUser):
        def bind_episode(self, task: Any, tools: list[dict[str, Any]]) -> None:
            return None

    played = await run_task(domain, task, 0, OracleAgent(), ScriptedUser())
    ignored = await run_task(domain, task, 0, OracleAgent(), Deaf())
    assert played.reward_value == 1.0 and ignored.reward_value == 0.0


@pytest.fixture
def emulator_address() -> Any:
    from tests.adapters.dialogflow.conftest import ThreadedEmulator

    require_data()
    with ThreadedEmulator(env="tau3/telecom") as emu:
        yield emu.address


def test_retail_and_telecom_through_the_dialogflow_emulator(
    tmp_path: Path, emulator_address: str
) -> None:
    tau(
        "run", "--agent-strategy", "decibel", "--emulator", emulator_address,
        "--agent-id", "any", "--project-id", "any", "--env", "tau3/retail,tau3/telecom",
        "--user-strategy", "scripted", "--judge-model", "assume-met", "--task-ids", "0-5",
        "--log-dir", tmp_path, "--quiet",
    )  # fmt: skip
    (log,) = tmp_path.glob("*.jsonl")
    records = episodes(log)
    ids = sorted(r["task_id"] for r in records)
    assert ids == sorted(f"tau3/{d}/{i}" for d in ("retail", "telecom") for i in range(6))
    assert {r["task_id"]: r["reward"] for r in records} == {i: 1.0 for i in ids}
    summary = json.loads(next(tmp_path.glob("*.summary.json")).read_text())
    by_domain = summary["by_domain"]
    assert {d: (v["scored"], v["avg_reward"]) for d, v in by_domain.items()} == {
        "tau3/retail": (6, 1.0),
        "tau3/telecom": (6, 1.0),
    }


def test_telecom_through_the_reference_http_bot(tmp_path: Path) -> None:
    import threading

    import uvicorn

    from adapters.http.harness.reference_bot import create_bot_app

    require_data()
    server = uvicorn.Server(
        uvicorn.Config(create_bot_app(), host="127.0.0.1", port=0, log_level="error")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            threading.Event().wait(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        config = tmp_path / "bot.yaml"
        tau("http", "init", "--preset", "generic-json", "-o", config)
        text = config.read_text().replace("${BOT_URL}", f"http://127.0.0.1:{port}")
        config.write_text(text.replace("Bearer ${BOT_TOKEN}", "Bearer x"))
        tau(
            "run", "--agent-strategy", "http", "--http-config", config,
            "--env", "tau3/telecom", "--user-strategy", "scripted", "--task-ids", "0-5",
            "--log-dir", tmp_path, "--quiet",
        )  # fmt: skip
    finally:
        server.should_exit = True
        thread.join()
    (log,) = tmp_path.glob("*.jsonl")
    assert [r["reward"] for r in episodes(log)] == [1.0] * 6


def test_gym_runs_the_users_phone_tools_on_the_user_side_only() -> None:
    import gymnasium

    import tau_bench.gym  # noqa: F401  (registers TauBench-v0)

    require_data()
    env = gymnasium.make("TauBench-v0", domain="tau3/telecom", user_strategy="scripted")
    _, info = env.reset(seed=0, options={"task_id": 0})
    agent_tools = {t["function"]["name"] for t in info["tools"]}
    task = env.unwrapped._episode.task  # type: ignore[attr-defined]
    assert not agent_tools & {a.name for a in task.user_actions}  # never in the action space
    obs, reward, done, _, _ = env.step(ask_user(task.user_actions))
    assert obs == "Yes, please go ahead." and not done  # the phone's output stays with the user
    _, reward, done, _, info = env.step("All done, thanks.")
    assert done and reward == 1.0 and info["stop_reason"] == "user_stop"
