"""TauBench-v0 under misuse: a failed user, overlapping calls on one env, arguments of the
wrong type and oversized actions are clear exceptions, never a corrupted episode."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from gymnasium.error import ResetNeeded

from tau_bench.gym import MAX_TEXT_LENGTH, InvalidActionError, TauBenchEnv
from tau_bench.llm import LLMError
from tests.conftest import DATA_DIR
from tests.tau_bench.agents.fake_llm import FakeLLM, Reply, Request

DEADLINE = 10.0  # seconds a refused call may take (it returns at once; the old code hung)


def make(**kw: Any) -> TauBenchEnv:
    base: dict[str, Any] = dict(domain="airline", user_strategy="scripted", data_dir=str(DATA_DIR))
    base.update(kw)
    return TauBenchEnv(**base)


def test_a_user_that_fails_mid_episode_ends_it(fake_llm: FakeLLM) -> None:
    answers = iter([Reply(text="Hello."), Reply(status=401, error="bad key"), Reply(text="Ok.")])
    fake_llm.brain = lambda request: next(answers)
    env = make(user_strategy="llm", user_model="openai/u")
    env.reset(options={"task_id": 13})
    with pytest.raises(LLMError):
        env.step("How can I help?")
    before = env.messages
    with pytest.raises(ResetNeeded, match="with an error"):
        env.step("Anything else?")
    assert env.messages == before  # nothing appended after the failure
    env.close()


def test_a_reset_whose_user_fails_leaves_no_episode_to_step(fake_llm: FakeLLM) -> None:
    def brain(request: Request) -> Reply:
        return Reply(status=401, error="bad key")

    fake_llm.brain = brain
    env = make(user_strategy="llm", user_model="openai/u")
    with pytest.raises(LLMError):
        env.reset(options={"task_id": 13})
    with pytest.raises(ResetNeeded):
        env.step("Hello?")
    env.close()


def test_a_reset_that_fails_does_not_leave_the_previous_episode_running() -> None:
    env = make()
    env.reset(options={"task_id": 13})
    with pytest.raises(ValueError, match="out of range"):
        env.reset(options={"task_id": 10**6})
    with pytest.raises(ResetNeeded):
        env.step("Hello?")


async def test_overlapping_calls_on_one_env_are_refused() -> None:
    env = make()
    await env.async_reset(options={"task_id": 13})
    episode = env._episode
    assert episode is not None
    release = asyncio.Event()
    entered = asyncio.Event()
    reply = episode.user.reply

    async def slow_reply(text: str) -> Any:
        entered.set()
        await release.wait()
        return await reply(text)

    episode.user.reply = slow_reply  # type: ignore[method-assign]
    first = asyncio.create_task(env.async_step("Question one?"))
    await entered.wait()
    with pytest.raises(RuntimeError, match="still running"):  # a deadline, not a hang
        await asyncio.wait_for(env.async_step("Question two?"), DEADLINE)
    with pytest.raises(RuntimeError, match="still running"):
        await asyncio.wait_for(env.async_reset(options={"task_id": 13}), DEADLINE)
    release.set()
    observation, *_ = await first
    assert observation == "Yes, please go ahead."
    assert [m["role"] for m in env.messages[1:]] == ["user", "assistant", "user"]
    await env.async_step("Question three?")  # free again once the first returned


def test_user_models_as_one_string_is_not_split_into_characters() -> None:
    assert make(user_models="openai/a").user_models == ["openai/a"]
    assert make(user_models="openai/a, openai/b").user_models == ["openai/a", "openai/b"]
    with pytest.raises(TypeError, match="model names"):
        make(user_models=["openai/a", 3])


@pytest.mark.parametrize("bad", [2.5, True, "30", None])
def test_max_turns_must_be_an_integer(bad: Any) -> None:
    with pytest.raises(TypeError, match="max_turns must be an integer"):
        make(max_turns=bad)


@pytest.mark.parametrize("bad", [[("task_id", 1)], "task_id=1", 5])
def test_reset_options_must_be_a_dict(bad: Any) -> None:
    with pytest.raises(TypeError, match="reset options must be a dict"):
        make().reset(options=bad)


@pytest.mark.parametrize(
    "action",
    [
        "x" * (MAX_TEXT_LENGTH + 1),
        {"role": "assistant", "content": "x" * (MAX_TEXT_LENGTH + 1)},
        {"tool_calls": [], "content": "x" * (MAX_TEXT_LENGTH + 1)},
    ],
)
def test_a_text_action_longer_than_the_action_space_is_invalid(action: Any) -> None:
    env = make()
    env.reset(options={"task_id": 13})
    with pytest.raises(InvalidActionError, match="at most"):
        env.step(action)
    assert not env.action_space.contains("x" * (MAX_TEXT_LENGTH + 1))
    _, _, terminated, _, _ = env.step("x" * MAX_TEXT_LENGTH)  # the limit itself is fine
    assert terminated  # the scripted user stops: no question asked
