"""act and react: tools in the prompt, one `Action: {json}` per reply, respond as an action."""

from __future__ import annotations

import json

import pytest

from tau_adapters.protocol import SessionContext, ToolResult, ToolResults, UserTurn
from tau_adapters.registry import build_provider
from tau_bench.agents.act import parse_action
from tau_bench.episode import run_task
from tau_bench.users import build_user
from tests.tau_bench.agents.fake_llm import FakeLLM, Reply, Request
from tests.tau_bench.agents.scenarios import RESERVATION, TASK_ID, USER_ID, Task13


@pytest.mark.parametrize(
    ("strategy", "model"),
    [("act", "openai/gpt-4o"), ("react", "anthropic/claude-sonnet-4-5")],
)
async def test_episode_task13(fake_llm: FakeLLM, airline, strategy: str, model: str) -> None:
    brain = Task13()
    fake_llm.brain = brain
    provider = build_provider(strategy, {"model": model, "temperature": None, "env": "airline"})
    user = build_user("llm", model="openai/gpt-4o")

    episode = await run_task(
        airline, airline.tasks()[TASK_ID], TASK_ID, provider.new_adapter(), user
    )

    result = episode.result
    assert result.error is None, result.error
    assert result.stop_reason == "terminate_tool"
    assert episode.reward_value == 1.0
    assert [a.name for a in episode.env.actions] == [
        "respond",
        "get_user_details",
        "transfer_to_human_agents",
    ]
    assert episode.env.actions[1].kwargs == {"user_id": USER_ID}
    assert RESERVATION in episode.env.actions[2].kwargs["summary"]
    assert brain.roles == ["user", "text_agent", "user", "text_agent", "text_agent"]
    # No native tools: the tool list and the respond action are in the system prompt.
    agent_requests = [r for r in fake_llm.requests if "# How to answer" in r.system]
    assert all(not r.tools for r in agent_requests)
    assert '"name": "respond"' in agent_requests[0].system
    assert '"name": "get_user_details"' in agent_requests[0].system
    assert agent_requests[0].system.startswith(airline.policy)
    assert ("Thought:" in agent_requests[0].system) == (strategy == "react")
    # The lookup's result came back to the model as an observation message.
    observation = agent_requests[-1].last_text
    assert observation.startswith("Observation: ")
    assert json.loads(observation[len("Observation: ") :])["name"]["first_name"] == "James"
    agent_turns = [t for t in result.turns if t.role == "agent"]
    if strategy == "react":
        assert agent_turns[-1].extra["thought"].endswith("I should call transfer_to_human_agents.")
    else:
        assert "thought" not in agent_turns[-1].extra


async def test_unparseable_reply_goes_to_the_user_as_text(fake_llm: FakeLLM, airline) -> None:
    def brain(request: Request) -> Reply:
        if request.last_text.startswith("Observation: "):
            return Reply(text="Action: {not json")
        return Reply(text=f"Action: {json.dumps({'name': 'think', 'arguments': {'thought': 'x'}})}")

    fake_llm.brain = brain
    agent = build_provider("act", {"model": "openai/gpt-4o"}).new_adapter()
    await agent.start(SessionContext("s", "airline", airline.tool_schemas, policy="P"))
    turn = await agent.send(UserTurn("hello"))
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("think", {"thought": "x"})]
    call = turn.tool_calls[0]
    turn = await agent.send(ToolResults([ToolResult(call.id, call.name, "")]))
    assert turn.tool_calls == []
    assert turn.messages == ["{not json"]
    assert "parse_error" in turn.extra


def test_parse_action_forms() -> None:
    parsed = parse_action(
        'Thought:\nneed the user\nAction:\n{"name": "get_user_details", "arguments": {"user_id": "a"}}'
    )
    assert (parsed.name, parsed.arguments, parsed.thought) == (
        "get_user_details",
        {"user_id": "a"},
        "need the user",
    )
    fenced = parse_action(
        'Action:\n```json\n{"name": "respond", "arguments": {"content": "Hi"}}\n```'
    )
    assert (fenced.name, fenced.arguments, fenced.error) == ("respond", {"content": "Hi"}, "")
    bare = parse_action("Hello, how can I help?")
    assert (bare.name, bare.arguments["content"]) == ("respond", "Hello, how can I help?")
    assert bare.error
    not_object = parse_action('Action: ["respond"]')
    assert not_object.name == "respond" and not_object.error
