"""The episode loop: stop conditions, step counting, tool execution, error capture."""

from __future__ import annotations

from typing import Any

from tau_adapters.loop import run_episode
from tau_adapters.protocol import (
    STOP_TOKEN,
    AdapterAuthError,
    AgentTurn,
    SessionContext,
    ToolCall,
    ToolOutput,
    ToolResults,
    Usage,
    UserTurn,
)


class RecordingExecutor:
    def __init__(self, terminate: set[str] | None = None) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.responses: list[str] = []
        self.terminate = terminate or {"transfer"}

    def execute(self, name: str, kwargs: Any) -> ToolOutput:
        self.calls.append((name, kwargs))
        if name == "boom":
            return ToolOutput("Error: boom", is_error=True)
        return ToolOutput(f"ok:{name}")

    def is_terminate(self, name: str) -> bool:
        return name in self.terminate

    def respond(self, content: str) -> None:
        self.responses.append(content)


class ScriptUser:
    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.seen: list[str] = []

    async def start(self, instruction: str) -> str:
        return instruction

    async def reply(self, agent_message: str) -> str:
        self.seen.append(agent_message)
        return self.replies.pop(0) if self.replies else STOP_TOKEN

    @property
    def usage(self) -> Usage:
        return Usage(cost=0.5, calls=1)


class ScriptAgent:
    """Returns the scripted turns in order; records what it was sent."""

    def __init__(self, turns: list[AgentTurn | Exception]) -> None:
        self.turns = list(turns)
        self.received: list[Any] = []
        self.closed = False

    async def start(self, session: SessionContext) -> None:
        self.session = session

    async def send(self, turn: Any) -> AgentTurn:
        self.received.append(turn)
        nxt = self.turns.pop(0) if self.turns else AgentTurn(messages=["bye"])
        if isinstance(nxt, Exception):
            raise nxt
        return nxt

    async def close(self) -> None:
        self.closed = True


SESSION = SessionContext(session_id="s", domain="d", tools=[], policy="policy")


def call(name: str, i: int = 0, **kw: Any) -> ToolCall:
    return ToolCall(id=f"{name}{i}", name=name, arguments=kw)


async def test_all_tool_calls_of_a_turn_run_in_order_and_results_go_back() -> None:
    agent = ScriptAgent(
        [AgentTurn(tool_calls=[call("a"), call("boom"), call("b")]), AgentTurn(messages=["done?"])]
    )
    ex = RecordingExecutor()
    res = await run_episode(agent, ex, ScriptUser([]), SESSION, "hi")
    assert [c[0] for c in ex.calls] == ["a", "boom", "b"]
    results = agent.received[1]
    assert isinstance(results, ToolResults)
    assert [(r.name, r.content, r.is_error) for r in results.results] == [
        ("a", "ok:a", False),
        ("boom", "Error: boom", True),
        ("b", "ok:b", False),
    ]
    assert res.stop_reason == "user_stop"
    assert ex.responses == ["done?"]
    assert res.steps == 4
    assert agent.closed
    roles = [m["role"] for m in res.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "tool", "assistant", "user"]


async def test_max_tool_calls_per_turn_keeps_only_the_first() -> None:
    agent = ScriptAgent([AgentTurn(tool_calls=[call("a"), call("b")]), AgentTurn(messages=["x"])])
    ex = RecordingExecutor()
    res = await run_episode(agent, ex, ScriptUser([]), SESSION, "hi", max_tool_calls_per_turn=1)
    assert [c[0] for c in ex.calls] == ["a"]
    assert len(agent.received[1].results) == 1
    assert res.dropped_tool_calls == 1


async def test_terminate_tool_ends_episode_after_running() -> None:
    agent = ScriptAgent(
        [AgentTurn(messages=["handing over"], tool_calls=[call("transfer"), call("a")])]
    )
    ex = RecordingExecutor()
    res = await run_episode(agent, ex, ScriptUser([]), SESSION, "hi")
    assert res.stop_reason == "terminate_tool"
    assert [c[0] for c in ex.calls] == ["transfer"]
    assert ex.responses == ["handing over"]


async def test_max_steps_counts_tool_calls_and_messages() -> None:
    agent = ScriptAgent([AgentTurn(tool_calls=[call("a", i)]) for i in range(50)])
    res = await run_episode(agent, RecordingExecutor(), ScriptUser([]), SESSION, "hi", max_steps=7)
    assert res.stop_reason == "max_steps"
    assert res.steps == 7
    agent = ScriptAgent([AgentTurn(messages=[f"q{i}?"]) for i in range(50)])
    res = await run_episode(
        agent, RecordingExecutor(), ScriptUser(["more"] * 50), SESSION, "hi", max_steps=3
    )
    assert (res.stop_reason, res.steps) == ("max_steps", 3)


async def test_agent_end_and_handoff() -> None:
    res = await run_episode(
        ScriptAgent([AgentTurn(messages=["bye"], end_conversation=True)]),
        RecordingExecutor(),
        ScriptUser([]),
        SESSION,
        "hi",
    )
    assert res.stop_reason == "agent_end"
    res = await run_episode(
        ScriptAgent([AgentTurn(messages=["a human will help"], handoff=True)]),
        RecordingExecutor(),
        ScriptUser([]),
        SESSION,
        "hi",
    )
    assert res.stop_reason == "agent_handoff"


async def test_adapter_exception_becomes_typed_error_not_raise() -> None:
    agent = ScriptAgent([AgentTurn(tool_calls=[call("a")]), AdapterAuthError("401 from bot")])
    ex = RecordingExecutor()
    res = await run_episode(agent, ex, ScriptUser([]), SESSION, "hi")
    assert res.stop_reason == "error"
    assert res.error is not None
    assert (res.error.source, res.error.kind) == ("agent", "auth_error")
    assert "401" in res.error.message
    assert agent.closed
    res = await run_episode(ScriptAgent([ValueError("bad")]), ex, ScriptUser([]), SESSION, "hi")
    assert res.error is not None and res.error.kind == "ValueError"


async def test_user_stop_on_first_message_and_user_errors() -> None:
    class BrokenUser(ScriptUser):
        async def reply(self, agent_message: str) -> str:
            raise ConnectionError("provider down")

    res = await run_episode(
        ScriptAgent([]), RecordingExecutor(), ScriptUser([]), SESSION, STOP_TOKEN
    )
    assert res.stop_reason == "user_stop"
    res = await run_episode(
        ScriptAgent([AgentTurn(messages=["?"])]), RecordingExecutor(), BrokenUser([]), SESSION, "hi"
    )
    assert res.error is not None and res.error.source == "user"
    assert res.user_usage.cost == 0.5


async def test_usage_and_latency_recorded() -> None:
    agent = ScriptAgent(
        [
            AgentTurn(
                messages=["x"],
                usage=Usage(prompt_tokens=3, completion_tokens=2, cost=0.25, calls=1),
            )
        ]
    )
    res = await run_episode(agent, RecordingExecutor(), ScriptUser([]), SESSION, "hi")
    assert res.agent_usage.cost == 0.25 and res.agent_usage.prompt_tokens == 3
    assert [t.role for t in res.turns] == ["user", "agent", "user"]
    assert all(t.latency >= 0 for t in res.turns)
    assert isinstance(agent.received[0], UserTurn)
