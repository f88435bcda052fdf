"""TauBench-v0: the env checker, offline episodes, rewards, truncation, rotation, asyncio."""

from __future__ import annotations

import asyncio
import json
import warnings
from typing import Any

import gymnasium
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env

import tau_bench.gym
from tau_adapters.protocol import STOP_TOKEN
from tau_bench.gym import TauBenchEnv
from tau_bench.suites import UnknownDomainError
from tau_bench.users.prompts import GREETING
from tests.conftest import DATA_DIR, TAU3_DATA_DIR
from tests.tau_bench.agents.fake_llm import FakeLLM, Reply, Request

TRANSFER_13 = (
    "User wants to change my upcoming one stop flight from ATL to LAX within reservation "
    "XEWRD9 to a nonstop flight from ATL to LAS (Las Vegas). The reservation is partially used."
)


def make(**kw: Any) -> TauBenchEnv:
    base: dict[str, Any] = dict(domain="airline", user_strategy="scripted", data_dir=str(DATA_DIR))
    base.update(kw)
    return TauBenchEnv(**base)


def ground_truth_calls(env: TauBenchEnv) -> list[dict[str, Any]]:
    task = env.task
    assert task is not None
    return [
        {
            "id": f"gt_{i}",
            "type": "function",
            "function": {"name": a.name, "arguments": json.dumps(a.kwargs)},
        }
        for i, a in enumerate(task.actions)
        if a.name != "respond"
    ]


def test_registered_on_import_and_the_env_checker_passes():
    assert tau_bench.gym.ENV_ID in gymnasium.registry
    env = gymnasium.make(
        "TauBench-v0",
        domain="airline",
        user_strategy="scripted",
        task_ids=[13, 0, 1],
        max_turns=5,
        data_dir=str(DATA_DIR),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    gym_warnings = [str(w.message) for w in caught if "gymnasium" in str(w.filename)]
    assert gym_warnings == []
    assert isinstance(env.observation_space, gymnasium.spaces.Text)
    assert env.observation_space.max_length == tau_bench.gym.MAX_TEXT_LENGTH
    assert "reçu ✓ {json}" in env.observation_space
    env.close()
    env.close()


def test_make_with_the_module_prefix():
    env = gymnasium.make(
        "tau_bench.gym:TauBench-v0",
        domain="retail",
        user_strategy="scripted",
        data_dir=str(DATA_DIR),
    )
    obs, info = env.reset(seed=3)
    assert obs and info["domain"] == "retail"
    env.close()


def test_reset_returns_the_first_message_tools_policy_and_task_id():
    env = make()
    obs, info = env.reset(seed=0, options={"task_id": 13})
    assert obs == env.task.instruction  # type: ignore[union-attr]  # the scripted user
    assert info["task_id"] == 13 and info["domain"] == "airline" and info["split"] == "test"
    assert {t["function"]["name"] for t in info["tools"]} >= {"transfer_to_human_agents"}
    assert info["policy"].lower().startswith("# airline agent policy")
    assert info["observation_role"] == "user" and info["turn"] == 0
    assert info["user_model"] is None  # the scripted user has no model
    env.close()


def test_ground_truth_tool_calls_score_1_as_in_tau_run():
    env = make(max_turns=10)
    env.reset(options={"task_id": 13})
    calls = ground_truth_calls(env)
    obs, reward, terminated, truncated, info = env.step(calls[0])
    assert obs == "Transfer successful"
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["stop_reason"] == "terminate_tool"
    assert info["reward_info"]["reward"] == 1.0
    assert info["reward_info"]["info"] == {
        "r_actions": 1.0,
        "gt_data_hash": info["reward_info"]["gt_data_hash"],
    }
    assert info["tool_call_id"] == "gt_0" and info["tool_name"] == "transfer_to_human_agents"
    with pytest.raises(ResetNeeded):
        env.step("anything else?")
    env.close()


def test_a_db_changing_task_through_json_text_actions_then_the_user_stops():
    env = make(max_turns=10)
    env.reset(options={"task_id": 1})
    rewards = []
    for call in ground_truth_calls(env):
        obs, reward, terminated, truncated, info = env.step(json.dumps(call))
        assert info["observation_role"] == "tool" and not obs.startswith("Error")
        rewards.append(reward)
        assert not (terminated or truncated)
    # A question gets the scripted affirmative; a statement ends the conversation.
    obs, reward, terminated, _, info = env.step("Anything else I can do?")
    assert obs == "Yes, please go ahead." and not terminated and info["observation_role"] == "user"
    obs, reward, terminated, truncated, info = env.step("It is cancelled.")
    assert obs == STOP_TOKEN and (reward, terminated, truncated) == (1.0, True, False)
    assert rewards == [0.0] * len(rewards)
    assert info["stop_reason"] == "user_stop"
    assert [m["role"] for m in env.messages][:2] == ["system", "user"]
    env.close()


def test_wrong_actions_score_0_with_the_reward_info():
    env = make()
    env.reset(options={"task_id": 1})
    _, reward, terminated, _, info = env.step("Sorry, I cannot help.")
    assert (reward, terminated) == (0.0, True)
    assert info["reward_info"]["r_actions"] == 0.0
    assert info["reward_info"]["data_hash"] != info["reward_info"]["gt_data_hash"]


def test_max_turns_truncates_with_reward_0():
    env = make(max_turns=2)
    env.reset(options={"task_id": 13})
    lookup = {"name": "get_user_details", "arguments": {"user_id": "james_lee_6136"}}
    assert env.step(lookup)[2:4] == (False, False)
    obs, reward, terminated, truncated, info = env.step(lookup)
    assert obs.startswith("{") and (reward, terminated, truncated) == (0.0, False, True)
    assert info["stop_reason"] == "max_steps" and info["reward_info"]["unfinished"] is True
    # A message as the last allowed action: no user reply, empty observation.
    env.reset(options={"task_id": 13})
    env.step(lookup)
    obs, reward, terminated, truncated, info = env.step("Can I help with anything else?")
    assert (obs, reward, terminated, truncated) == ("", 0.0, False, True)


def test_reset_options_domain_split_and_namespaced_task_id():
    env = make()
    _, info = env.reset(options={"task_id": "airline/5"})
    assert (info["domain"], info["task_id"]) == ("airline", 5)
    _, info = env.reset(options={"domain": "retail", "task_id": "retail/5"})
    assert (info["domain"], info["task_id"]) == ("retail", 5)
    _, info = env.reset(options={"domain": "retail", "split": "dev", "task_id": 0})
    assert (info["domain"], info["split"]) == ("retail", "dev")
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"taskid": 3})
    with pytest.raises(ValueError, match="out of range"):
        env.reset(options={"task_id": 999})
    with pytest.raises(UnknownDomainError):
        make(domain="hotel")


def test_task_ids_of_another_domain_or_suite_are_refused_not_dropped():
    # Were they dropped, every reset would draw from the whole split instead.
    for domain, task_ids, data_dir in [
        ("retail", ["airline/3"], DATA_DIR),
        ("tau3/retail", ["retail/3"], TAU3_DATA_DIR),
        ("retail,airline", ["retail/1", "tau3/retail/1"], DATA_DIR),
    ]:
        with pytest.raises(ValueError, match="not played here"):
            make(domain=domain, task_ids=task_ids, data_dir=str(data_dir))
    with pytest.raises(ValueError, match="out of range"):
        make(task_ids=[0, 50])
    assert make(domain="retail,airline", task_ids=["airline/3"]).task_ids == [("airline", 3)]


def test_a_reset_plays_only_its_domains_unless_the_domain_option_switches():
    env = make(domain="retail,airline")
    for task_id in ("tau3/retail/1", "telecom/0"):
        with pytest.raises(ValueError, match=r"not played here.*'domain' option"):
            env.reset(options={"task_id": task_id})
    _, info = env.reset(options={"task_id": "airline/3"})
    assert (info["domain"], info["task_id"]) == ("airline", "airline/3")
    with pytest.raises(ValueError, match="not played here"):
        make().reset(options={"task_id": "retail/5"})  # an airline env
    with pytest.raises(ValueError, match="not played here"):
        make().reset(options={"domain": "retail", "task_id": "airline/5"})
    env.close()


def test_seeded_resets_draw_tasks_from_task_ids_reproducibly():
    env = make(task_ids=[0, 1, 13])
    first = [env.reset(seed=s)[1]["task_id"] for s in range(8)]
    again = [env.reset(seed=s)[1]["task_id"] for s in range(8)]
    assert first == again and set(first) <= {0, 1, 13} and len(set(first)) > 1


def test_a_malformed_tool_calls_action_is_an_invalid_action_and_the_episode_goes_on():
    env = make()
    env.reset(options={"task_id": 13})
    for action in ({"tool_calls": 5}, '{"tool_calls": 5}', {"tool_calls": True}):
        with pytest.raises(tau_bench.gym.InvalidActionError):
            env.step(action)
    with pytest.raises(tau_bench.gym.InvalidActionError):
        env.step({"tool_calls": {"x": 1}})
    obs, *_ = env.step({"name": "calculate", "arguments": {"expression": "2 + 2"}})
    assert obs == "4.0"
    assert len(env.messages) == 4  # system, user, the call and its result: nothing else
    env.close()


def test_step_before_reset_needs_a_reset():
    with pytest.raises(ResetNeeded):
        make().step("hello")


def test_render_ansi_shows_the_conversation():
    env = make(render_mode="ansi")
    env.reset(options={"task_id": 13})
    env.step({"name": "get_user_details", "arguments": {"user_id": "james_lee_6136"}})
    text = env.render()
    assert text is not None
    assert text.startswith("user: Your user id is james_lee_6136")
    assert "assistant -> get_user_details(" in text and "tool get_user_details: {" in text


# -- LLM users (respx-mocked models) ------------------------------------------------------


def customer(request: Request) -> Reply:
    """A user model that greets, answers one question, then stops; it signs with its name."""
    if request.last_text == GREETING:
        return Reply(text=f"Hello from {request.model}.")
    if "?" in request.last_text:
        return Reply(text="Yes.")
    return Reply(text=STOP_TOKEN)


def test_user_model_rotation_per_reset_with_seed_and_sampling(fake_llm: FakeLLM):
    fake_llm.brain = customer
    env = make(
        user_strategy="llm",
        user_models=["openai/user-a", "openai/user-b"],
        user_temperature=0.7,
        user_top_p=0.9,
    )
    seen = []
    for i in range(3):
        obs, info = env.reset(seed=i, options={"task_id": 13})
        seen.append((obs, info["user_model"]))
    assert seen == [
        ("Hello from user-a.", "openai/user-a"),
        ("Hello from user-b.", "openai/user-b"),
        ("Hello from user-a.", "openai/user-a"),
    ]
    _, info = env.reset(options={"task_id": 13, "user_model": "openai/user-c"})
    assert info["user_model"] == "openai/user-c"
    assert env.resets == 4
    bodies = [r.body for r in fake_llm.requests]
    assert all(b["temperature"] == 0.7 and b["top_p"] == 0.9 for b in bodies)
    seeds = [b["seed"] for b in bodies]
    assert all(isinstance(s, int) and 0 <= s < 2**31 for s in seeds)
    assert len(set(seeds[:2])) == 2  # each episode has its own seed

    obs, reward, terminated, _, info = env.step("Shall I transfer you?")
    assert (obs, terminated, info["observation_role"]) == ("Yes.", False, "user")
    obs, reward, terminated, _, info = env.step(
        {"name": "transfer_to_human_agents", "arguments": {"summary": TRANSFER_13}}
    )
    assert (reward, terminated) == (1.0, True)
    assert info["user_usage"]["calls"] == 2
    env.close()


def test_same_seed_same_user_seed(fake_llm: FakeLLM):
    fake_llm.brain = customer
    env = make(user_strategy="llm", user_model="openai/u")
    env.reset(seed=42, options={"task_id": 13})
    env.reset(seed=42, options={"task_id": 13})
    env.reset(seed=43, options={"task_id": 13})
    a, b, c = (r.body["seed"] for r in fake_llm.requests)
    assert a == b != c


async def test_async_api_runs_many_episodes_at_once(fake_llm: FakeLLM):
    fake_llm.brain = customer
    envs = [make(user_strategy="llm", user_model=f"openai/u{i}") for i in range(6)]

    async def rollout(env: TauBenchEnv, task_id: int) -> tuple[str, float, str]:
        first, _ = await env.async_reset(seed=task_id, options={"task_id": task_id})
        _, reward, terminated, truncated, info = await env.async_step("Done.")
        assert terminated and not truncated
        return first, float(reward), info["stop_reason"]

    results = await asyncio.gather(*(rollout(env, i) for i, env in enumerate(envs)))
    assert [r[0] for r in results] == [f"Hello from u{i}." for i in range(6)]
    assert all(r[2] == "user_stop" for r in results)
    assert len(fake_llm.requests) == 12


async def test_sync_api_inside_a_running_loop(fake_llm: FakeLLM):
    """A notebook calls reset/step while its own loop runs: they run on a worker thread."""
    fake_llm.brain = customer
    env = make(user_strategy="llm", user_model="openai/nb")
    obs, _ = env.reset(options={"task_id": 13})
    assert obs == "Hello from nb."
    assert env.step("Thanks, bye.")[2] is True
    env.close()


def test_a_user_api_base_that_is_no_url_is_refused_at_construction():
    with pytest.raises(ValueError, match="expected an http\\(s\\) URL"):
        make(user_api_base="localhost:8000/v1")
    assert (
        make(user_api_base="http://localhost:8000/v1").user_api_base == "http://localhost:8000/v1"
    )
