"""The tool-calling agent through real litellm calls answered by respx, on a real task."""

from __future__ import annotations

import pytest

from tau_adapters.protocol import SessionContext, ToolResult, ToolResults, UserTurn
from tau_adapters.registry import build_provider
from tau_bench.agents.tool_calling import ToolCallingAgent, build, decode_arguments
from tau_bench.episode import run_task
from tau_bench.llm import LLMConfig
from tau_bench.users import build_user
from tests.tau_bench.agents.fake_llm import FakeLLM, Reply, Request
from tests.tau_bench.agents.scenarios import RESERVATION, TASK_ID, USER_ID, Task13

MODELS = {
    "openai": "openai/gpt-4o",
    "anthropic": "anthropic/claude-sonnet-4-5",
    "gemini": "gemini/gemini-2.5-flash",
}


@pytest.mark.parametrize("provider", sorted(MODELS))
async def test_episode_task13_scores_one(fake_llm: FakeLLM, airline, provider: str) -> None:
    brain = Task13()
    fake_llm.brain = brain
    model = MODELS[provider]
    agent = build_provider("tool-calling", {"model": model, "seed": 3, "extra_key": 1})
    user = build_user("llm", model=model, provider=None, temperature=0.0, seed=3)
    task = airline.tasks()[TASK_ID]

    episode = await run_task(airline, task, TASK_ID, agent.new_adapter(), user)

    result = episode.result
    assert result.error is None, result.error
    assert result.stop_reason == "terminate_tool"
    assert episode.reward_value == 1.0
    names = [a.name for a in episode.env.actions]
    assert names == ["respond", "get_user_details", "transfer_to_human_agents"]
    assert episode.env.actions[1].kwargs == {"user_id": USER_ID}
    summary = episode.env.actions[2].kwargs["summary"]
    assert "James Lee" in summary and RESERVATION in summary
    # Every request really went to the provider's endpoint, in its wire format.
    assert {r.provider for r in fake_llm.requests} == {provider}
    assert brain.roles == ["user", "agent", "user", "agent", "agent"]
    assert result.agent_usage.calls == 3 and result.user_usage.calls == 2
    assert result.agent_usage.prompt_tokens > 0 and result.agent_usage.cost > 0
    assert result.user_usage.cost > 0
    if provider == "gemini":
        # Gemini's thought signatures on function calls are sent back with the history.
        last = fake_llm.requests[-1]
        calls = [c for m in last.messages for c in m.get("tool_calls", [])]
        assert [(c["name"], c["signature"]) for c in calls] == [
            ("get_user_details", "sig-get_user_details")
        ]
    # The policy is the agent's system prompt and the tools are the domain's.
    agent_request = next(r for r in fake_llm.requests if r.tools)
    assert agent_request.system == airline.policy
    assert agent_request.tools == [t["function"]["name"] for t in airline.tool_schemas]
    # The user's first message answers the greeting, which the agent never sent itself.
    assert result.messages[1] == {
        "role": "user",
        "content": f"Hi, I'd like to change the flight in my reservation {RESERVATION}.",
    }


def _two_lookups(request: Request) -> Reply:
    if request.last.get("role") == "user":
        return Reply(
            text="Let me look both up.",
            tool_calls=[
                ("get_user_details", {"user_id": USER_ID}),
                ("get_user_details", {"user_id": "mia_li_3668"}),
            ],
        )
    seen = [m for m in request.messages if m["role"] == "tool"]
    return Reply(text=f"I looked up {len(seen)} user(s).")


async def test_results_for_a_prefix_drop_the_other_calls(fake_llm: FakeLLM, airline) -> None:
    fake_llm.brain = _two_lookups
    agent = ToolCallingAgent(LLMConfig(model="openai/gpt-4o"))
    session = SessionContext("s1", "airline", airline.tool_schemas, policy="POLICY")
    await agent.start(session)

    turn = await agent.send(UserTurn("look up two users"))
    assert [c.name for c in turn.tool_calls] == ["get_user_details", "get_user_details"]
    assert turn.tool_calls[1].arguments == {"user_id": "mia_li_3668"}
    first = turn.tool_calls[0]
    answer = await agent.send(ToolResults([ToolResult(first.id, first.name, '{"name": "James"}')]))

    assert answer.text == "I looked up 1 user(s)."
    sent = fake_llm.requests[-1].body["messages"]
    assistant = next(m for m in sent if m["role"] == "assistant")
    assert [c["id"] for c in assistant["tool_calls"]] == [first.id]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == [first.id]


async def test_max_tool_calls_per_turn_through_the_loop(fake_llm: FakeLLM, airline) -> None:
    def brain(request: Request) -> Reply:
        if "You are playing a customer" in request.system:
            return Reply(text="###STOP###" if request.texts("assistant") else "Look up my account.")
        return _two_lookups(request)

    fake_llm.brain = brain
    adapter = build({"model": "openai/gpt-4o"}).new_adapter()
    user = build_user("llm", model="openai/gpt-4o")
    episode = await run_task(
        airline, airline.tasks()[TASK_ID], TASK_ID, adapter, user, max_tool_calls_per_turn=1
    )

    assert episode.result.dropped_tool_calls == 1
    assert [(a.name, a.kwargs) for a in episode.env.actions if a.name != "respond"] == [
        ("get_user_details", {"user_id": USER_ID})
    ]
    assert episode.result.stop_reason == "user_stop"
    assert episode.env.actions[-1].kwargs == {"content": "I looked up 1 user(s)."}


# Python's decoder raises RecursionError, not a ValueError, on text nested this deep.
TOO_DEEP = '{"user_id": ' + "[" * 100_000 + "]" * 100_000 + "}"


@pytest.mark.parametrize("arguments", ['{"user_id": ', TOO_DEEP], ids=["truncated", "too_deep"])
async def test_undecodable_arguments_reach_the_env_as_an_error(
    fake_llm: FakeLLM, airline, arguments: str
) -> None:
    def brain(request: Request) -> Reply:
        if "You are playing a customer" in request.system:
            return Reply(text="###STOP###" if request.texts("assistant") else "Look me up.")
        last = request.last
        if last.get("role") == "tool":
            return Reply(text=f"The tool said: {last['content']}")
        return Reply(tool_calls=[("get_user_details", arguments)])

    fake_llm.brain = brain
    adapter = build({"model": "openai/gpt-4o"}).new_adapter()
    user = build_user("llm", model="openai/gpt-4o")
    episode = await run_task(airline, airline.tasks()[TASK_ID], TASK_ID, adapter, user)

    assert episode.result.error is None
    lookup = episode.env.actions[0]
    assert lookup.name == "get_user_details"
    assert lookup.kwargs == {"__invalid_kwargs__": arguments}
    reply = episode.env.actions[1].kwargs["content"]
    assert reply.startswith("The tool said: Error:")
    assert decode_arguments("") == {}
    assert decode_arguments('{"a": 1}') == {"a": 1}
