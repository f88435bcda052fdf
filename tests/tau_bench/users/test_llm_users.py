"""The LLM user strategies through real litellm calls answered by respx."""

from __future__ import annotations

import re

import pytest

from tau_adapters.protocol import STOP_TOKEN, AdapterConfigError
from tau_bench.episode import run_task
from tau_bench.users import build_user
from tau_bench.users.llm_users import (
    LLMUser,
    ReactUser,
    ReflectionUser,
    VerifyUser,
    parse_react,
    parse_reflection,
    parse_verdict,
)
from tau_bench.users.prompts import GREETING
from tests.tau_bench.agents.fake_llm import FakeLLM, Reply, Request
from tests.tau_bench.agents.scenarios import TASK_ID, Task13, customer_reply

INSTRUCTION = "Your user id is mia_li_3668. You want to know the status of order #W1234567."


def _user_id(system: str) -> str:
    match = re.search(r"user id is (\w+)", system)
    assert match
    return match.group(1)


async def test_llm_user_answers_the_greeting_then_stops(fake_llm: FakeLLM) -> None:
    def brain(request: Request) -> Reply:
        if request.last_text == GREETING:
            return Reply(text=f"Hi! I'm {_user_id(request.system)} and I need help with an order.")
        return Reply(text=STOP_TOKEN)

    fake_llm.brain = brain
    user = build_user("llm", model="openai/gpt-4o", seed=5, temperature=0.3)
    assert isinstance(user, LLMUser)
    first = await user.start(INSTRUCTION)
    assert first == "Hi! I'm mia_li_3668 and I need help with an order."
    request = fake_llm.requests[0]
    assert INSTRUCTION in request.system and STOP_TOKEN in request.system
    assert request.body["seed"] == 5 and request.body["temperature"] == 0.3
    # Roles are swapped: the agent speaks as "user", the customer as "assistant".
    assert await user.reply("It has shipped. Anything else?") == STOP_TOKEN
    assert [m["role"] for m in fake_llm.requests[1].messages] == ["user", "assistant", "user"]
    assert user.usage.calls == 2 and user.usage.cost > 0


async def test_react_user_sends_only_the_response(fake_llm: FakeLLM) -> None:
    def brain(request: Request) -> Reply:
        assert "User Response:" in request.system
        return Reply(
            text=f"Thought:\nThe agent greeted me; I give my id.\n\nUser Response:\nI am {_user_id(request.system)}."
        )

    fake_llm.brain = brain
    user = build_user("react", model="gemini/gemini-2.5-flash")
    assert isinstance(user, ReactUser)
    assert await user.start(INSTRUCTION) == "I am mia_li_3668."
    assert fake_llm.requests[0].provider == "gemini"
    # The thought stays in the simulator's own history, so the model keeps its format.
    assert user.messages[-1]["content"].startswith("Thought:")


async def test_verify_user_regenerates_a_rejected_message(fake_llm: FakeLLM) -> None:
    candidates = iter(["My order id is #W9999999.", "I don't remember my order id, sorry."])
    verdicts: list[str] = []

    def brain(request: Request) -> Reply:
        if request.system.startswith("You review"):
            invented = "#W9999999" in request.last_text.split("Proposed next customer message:")[1]
            verdicts.append("false" if invented else "true")
            return Reply(text=f"Checked.\nClassification: {verdicts[-1]}")
        return Reply(text=next(candidates))

    fake_llm.brain = brain
    user = build_user("verify", model="anthropic/claude-sonnet-4-5")
    assert isinstance(user, VerifyUser)
    assert await user.start(INSTRUCTION) == "I don't remember my order id, sorry."
    assert verdicts == ["false", "true"]
    assert user.rejected == ["My order id is #W9999999."]
    assert user.usage.calls == 4
    review = next(r for r in fake_llm.requests if r.system.startswith("You review"))
    assert INSTRUCTION in review.last_text and f"agent: {GREETING}" in review.last_text


async def test_verify_user_gives_up_after_max_attempts(fake_llm: FakeLLM) -> None:
    def brain(request: Request) -> Reply:
        if request.system.startswith("You review"):
            return Reply(text="Classification: false")
        return Reply(text=f"attempt {len(fake_llm.requests)}")

    fake_llm.brain = brain
    user = build_user("verify", model="openai/gpt-4o", max_verify_attempts=2)
    text = await user.start(INSTRUCTION)
    assert len(fake_llm.requests) == 4  # generate, verify, regenerate, verify
    assert text == "attempt 3"


async def test_reflection_user_rewrites_after_reflecting(fake_llm: FakeLLM) -> None:
    def brain(request: Request) -> Reply:
        if request.system.startswith("You review"):
            proposed = request.last_text.split("Proposed next customer message:")[1]
            return Reply(
                text="Classification: " + ("false" if "everything" in proposed else "true")
            )
        if "judged inconsistent" in request.last_text:
            assert "Here is everything" in request.last_text
            return Reply(
                text="Reflection:\nI said too much.\n\nResponse:\nHi, I have a question about an order."
            )
        return Reply(text="Here is everything: " + INSTRUCTION)

    fake_llm.brain = brain
    user = build_user("reflection", model="openai/gpt-4o")
    assert isinstance(user, ReflectionUser)
    assert await user.start(INSTRUCTION) == "Hi, I have a question about an order."
    assert user.usage.calls == 4  # generate, verify (no), reflect, verify (yes)
    assert user.messages[-1] == {
        "role": "assistant",
        "content": "Hi, I have a question about an order.",
    }


@pytest.mark.parametrize("strategy", ["react", "verify", "reflection"])
async def test_strategies_run_a_full_episode(fake_llm: FakeLLM, airline, strategy: str) -> None:
    scenario = Task13()

    def brain(request: Request) -> Reply:
        if request.system.startswith("You review"):
            return Reply(text="Looks right.\nClassification: true")
        if "User Response:" in request.system:
            return Reply(text="Thought:\nanswer\n\nUser Response:\n" + customer_reply(request))
        return scenario(request)

    fake_llm.brain = brain
    from tau_adapters.registry import build_provider

    agent = build_provider("tool-calling", {"model": "openai/gpt-4o"}).new_adapter()
    user = build_user(strategy, model="openai/gpt-4o")
    episode = await run_task(airline, airline.tasks()[TASK_ID], TASK_ID, agent, user)
    assert episode.result.error is None, episode.result.error
    assert episode.reward_value == 1.0
    assert episode.result.messages[3]["content"] == "Sure, my user id is james_lee_6136."


def test_parsers() -> None:
    assert parse_react("Thought:\nx\n\nUser Response:\nhello") == "hello"
    assert parse_react("Thought: x\nUser Response: a\nUser Response: b") == "b"
    assert parse_react("Thought: only a thought") == "only a thought"
    assert parse_react("plain text") == "plain text"
    assert parse_verdict("blah\nClassification: false") is False
    assert parse_verdict("Classification: **True**") is True
    assert parse_verdict("no verdict at all") is True
    assert parse_reflection("Reflection:\nr\n\nResponse:\nfixed") == "fixed"
    assert parse_reflection("just text") == "just text"


def test_unknown_strategy_is_rejected() -> None:
    from tau_bench.users import UnknownUserStrategyError

    with pytest.raises(UnknownUserStrategyError):
        build_user("telepathic")


@pytest.mark.parametrize("value", [0, -1, 101, 2.5, "many", True])
def test_max_verify_attempts_out_of_range_is_refused(value: object) -> None:
    # A 0 was read with `or` and became the default 3; a huge count had no end in sight.
    with pytest.raises(AdapterConfigError) as raised:
        build_user("reflection", model="openai/gpt-4o", max_verify_attempts=value)
    assert str(raised.value) == (
        f"option 'max_verify_attempts' must be a whole number from 1 to 100, got {value!r}"
    )


@pytest.mark.parametrize(("value", "expected"), [(None, 3), (1, 1), ("7", 7), (100, 100)])
def test_max_verify_attempts_in_range_is_taken(value: object, expected: int) -> None:
    user = build_user("verify", model="openai/gpt-4o", max_verify_attempts=value)
    assert isinstance(user, VerifyUser)
    assert user.max_attempts == expected
