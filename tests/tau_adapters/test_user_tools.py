"""A user with tools of its own in `run_episode`: its calls run on its side only."""

from __future__ import annotations

from typing import Any

from tau_adapters.loop import run_episode
from tau_adapters.protocol import (
    AgentInput,
    AgentTurn,
    SessionContext,
    ToolCall,
    ToolOutput,
    ToolResult,
    Usage,
    UserReply,
    UserTurn,
)


class Store:
    """A tiny executor over a dict: `set` writes, `get` reads; `who` names the side."""

    def __init__(self, who: str) -> None:
        self.who = who
        self.data: dict[str, Any] = {}
        self.calls: list[str] = []

    def execute(self, name: str, kwargs: Any) -> ToolOutput:
        self.calls.append(name)
        if name == "set":
            self.data[kwargs["key"]] = kwargs["value"]
            return ToolOutput(f"{self.who}: set {kwargs['key']}")
        if name == "get":
            return ToolOutput(f"{self.who}: {self.data.get(kwargs['key'])}")
        return ToolOutput(f"unknown tool {name}", is_error=True)

    def is_terminate(self, name: str) -> bool:
        return False

    def respond(self, content: str) -> None:
        return None


class EchoAgent:
    """Repeats back every user text it gets; ends after three of them."""

    def __init__(self) -> None:
        self.seen: list[AgentInput] = []

    async def start(self, session: SessionContext) -> None:
        return None

    async def send(self, turn: AgentInput) -> AgentTurn:
        self.seen.append(turn)
        texts = [t for t in self.seen if isinstance(t, UserTurn)]
        return AgentTurn(messages=[f"heard {len(texts)}?"], end_conversation=len(texts) >= 3)

    async def close(self) -> None:
        return None


class PhoneUser:
    """Sets then reads its own state before answering; says what it observed."""

    def __init__(self) -> None:
        self.observed: list[list[ToolResult]] = []
        self._plan: list[ToolCall] = []

    async def start(self, instruction: str) -> str:
        return instruction

    async def reply(self, agent_message: str) -> str | UserReply:
        self._plan = [ToolCall("u2", "get", {"key": "mode"})]
        return UserReply(text="", tool_calls=[ToolCall("u1", "set", {"key": "mode", "value": 4})])

    async def tool_results(self, results: list[ToolResult]) -> str | UserReply:
        self.observed.append(results)
        if self._plan:
            return UserReply(tool_calls=[self._plan.pop(0)])
        return f"my phone says {results[-1].content}"

    @property
    def usage(self) -> Usage:
        return Usage()


def session() -> SessionContext:
    return SessionContext(session_id="s", domain="d", tools=[])


async def test_user_tool_calls_run_on_the_user_side_and_only_words_reach_the_agent() -> None:
    agent, agent_side, user_side, user = EchoAgent(), Store("agent"), Store("user"), PhoneUser()
    result = await run_episode(agent, agent_side, user, session(), "hi", user_executor=user_side)

    assert result.error is None and result.stop_reason == "agent_end"
    assert agent_side.calls == [] and user_side.data == {"mode": 4}
    assert user_side.calls == ["set", "get", "set", "get"]
    # The agent saw the user's words only, never an observation of the user's tools.
    said = [t.text for t in agent.seen if isinstance(t, UserTurn)]
    assert said == ["hi", "my phone says user: 4", "my phone says user: 4"]
    assert [[r.content for r in rs] for rs in user.observed[:2]] == [
        ["user: set mode"],
        ["user: 4"],
    ]
    # The trajectory labels the user's calls and their observations with the requestor.
    user_calls = [m for m in result.messages if m["role"] == "user" and m.get("tool_calls")]
    assert [c["tool_calls"][0]["requestor"] for c in user_calls] == ["user"] * 4
    tool_msgs = [m for m in result.messages if m["role"] == "tool"]
    assert {m["requestor"] for m in tool_msgs} == {"user"}
    assert result.steps == 3  # the agent's three messages; the user's calls are no agent steps


async def test_agent_calls_say_assistant_when_the_user_has_tools() -> None:
    class OneCall(EchoAgent):
        async def send(self, turn: AgentInput) -> AgentTurn:
            self.seen.append(turn)
            if len(self.seen) == 1:
                return AgentTurn(tool_calls=[ToolCall("a1", "set", {"key": "k", "value": 1})])
            return AgentTurn(messages=["done"], end_conversation=True)

    agent_side, user_side = Store("agent"), Store("user")
    result = await run_episode(
        OneCall(), agent_side, PhoneUser(), session(), "hi", user_executor=user_side
    )
    (call,) = [m for m in result.messages if m["role"] == "assistant" and m.get("tool_calls")]
    assert call["tool_calls"][0]["requestor"] == "assistant"
    assert agent_side.data == {"k": 1} and user_side.data == {}


async def test_a_user_calling_tools_without_any_is_a_user_error() -> None:
    result = await run_episode(EchoAgent(), Store("agent"), PhoneUser(), session(), "hi")
    assert result.error is not None
    assert (result.error.source, result.error.kind) == ("user", "config_error")
    assert result.stop_reason == "error"


async def test_a_user_looping_on_its_tools_is_cut_off_at_the_step_limit() -> None:
    class Looping(PhoneUser):
        async def tool_results(self, results: list[ToolResult]) -> str | UserReply:
            return UserReply(tool_calls=[ToolCall("x", "get", {"key": "mode"})])

    user_side = Store("user")
    result = await run_episode(
        EchoAgent(), Store("agent"), Looping(), session(), "hi", max_steps=5,
        user_executor=user_side,
    )  # fmt: skip
    assert result.stop_reason == "max_steps" and result.error is None
    assert len(user_side.calls) == 5
