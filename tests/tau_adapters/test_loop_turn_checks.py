"""The loop checks what an adapter's `send` returns: a malformed turn ends the episode as
the agent's protocol error naming the mistake (never an AttributeError of ours, never a
string recorded letter by letter), and usage no reader accepts is counted as 0 with a
warning (it never fails the episode)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from tau_adapters.loop import run_episode
from tau_adapters.protocol import (
    STOP_TOKEN,
    AgentTurn,
    SessionContext,
    ToolCall,
    ToolOutput,
    Usage,
)


class OneTurn:
    def __init__(self, turn: Any) -> None:
        self.turn = turn
        self.closed = False

    async def start(self, session: SessionContext) -> None:
        pass

    async def send(self, turn: Any) -> Any:
        return self.turn

    async def close(self) -> None:
        self.closed = True


class NoTools:
    def execute(self, name: str, kwargs: Any) -> ToolOutput:
        return ToolOutput("ok")

    def is_terminate(self, name: str) -> bool:
        return False

    def respond(self, content: str) -> None:
        pass


class User:
    async def start(self, instruction: str) -> str:
        return "hi"

    async def reply(self, agent_message: str) -> str:
        return STOP_TOKEN

    @property
    def usage(self) -> Usage:
        return Usage()


SESSION = SessionContext(session_id="s", domain="d", tools=[])


@pytest.mark.parametrize(
    ("turn", "expected"),
    [
        (None, "send returned NoneType, expected AgentTurn"),
        (5, "send returned int, expected AgentTurn"),
        ({"messages": ["hi"]}, "send returned dict, expected AgentTurn"),
        (AgentTurn(messages="hello world"), "messages must be a list of str, got str"),  # type: ignore[arg-type]
        (AgentTurn(messages=[b"bytes"]), "messages must be a list of str, one is bytes"),  # type: ignore[list-item]
        (
            AgentTurn(tool_calls=[ToolCall(id=None, name=None, arguments=object())]),  # type: ignore[arg-type]
            "tool_calls[0].id is NoneType, expected str",
        ),
        (
            AgentTurn(tool_calls=[ToolCall(id="c", name="n", arguments={"x": object()})]),
            "tool_calls[0].arguments cannot be encoded as JSON",
        ),
        (AgentTurn(tool_calls=[{"id": "c", "name": "n"}]), "tool_calls[0] is dict"),  # type: ignore[list-item]
        (AgentTurn(tool_calls={"a": 1}), "tool_calls is dict"),  # type: ignore[arg-type]
        (AgentTurn(messages=["ok"], usage={"cost": 1}), "usage is dict"),  # type: ignore[arg-type]
        (AgentTurn(messages=["ok"], raw=None), "raw is NoneType"),  # type: ignore[arg-type]
        (AgentTurn(messages=["ok"], extra=None), "extra is NoneType"),  # type: ignore[arg-type]
    ],
)
async def test_a_malformed_turn_is_the_agents_protocol_error(turn: Any, expected: str) -> None:
    adapter = OneTurn(turn)
    result = await run_episode(adapter, NoTools(), User(), SESSION, "go")
    assert result.error is not None
    assert (result.error.source, result.error.kind) == ("agent", "protocol_error")
    assert expected in result.error.message and "\n" not in result.error.message
    assert result.stop_reason == "error" and adapter.closed
    assert not any(m.get("role") == "assistant" for m in result.messages)


@pytest.mark.parametrize(
    ("usage", "dropped"),
    [
        (Usage(prompt_tokens=10, cost=math.nan), ["cost=nan"]),
        (Usage(completion_tokens=3, cost=math.inf), ["cost=inf"]),
        (Usage(prompt_tokens=-5, completion_tokens=-7, cost=-1.0, calls=-1), None),
        (Usage(prompt_tokens="12", cost="0.5"), ["prompt_tokens='12'", "cost='0.5'"]),  # type: ignore[arg-type]
    ],
)
async def test_unusable_usage_is_counted_as_zero_with_one_warning(
    usage: Usage, dropped: list[str] | None
) -> None:
    turn = AgentTurn(messages=["ok"], usage=usage)
    result = await run_episode(OneTurn(turn), NoTools(), User(), SESSION, "go")
    assert result.error is None and result.stop_reason == "user_stop"
    totals = result.agent_usage.to_dict()
    assert all(math.isfinite(v) and v >= 0 for v in totals.values()), totals
    [agent_turn] = [t for t in result.turns if t.role == "agent"]
    recorded = agent_turn.usage
    assert recorded is not None and all(math.isfinite(v) and v >= 0 for v in recorded.values())
    assert result.warnings and all(w.startswith("agent usage: ") for w in result.warnings)
    for item in dropped or []:
        assert any(item in w for w in result.warnings), result.warnings


async def test_a_usage_warning_is_given_once_per_field() -> None:
    class Repeats(OneTurn):
        async def send(self, turn: Any) -> AgentTurn:
            return AgentTurn(messages=["again"], usage=Usage(cost=math.nan, calls=1))

    class Chatty(User):
        n = 0

        async def reply(self, agent_message: str) -> str:
            self.n += 1
            return "more" if self.n < 3 else STOP_TOKEN

    result = await run_episode(Repeats(None), NoTools(), Chatty(), SESSION, "go")
    assert result.error is None and result.agent_usage.calls == 3
    assert result.warnings == ["agent usage: cost=nan is not a finite number >= 0; counted as 0"]
