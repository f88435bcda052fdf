"""An adapter's close is held to the turn deadline: a close that never returns is a
warning on a finished episode, not an agent timeout of the whole episode."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tau_adapters.loop import run_episode
from tau_adapters.protocol import (
    STOP_TOKEN,
    AdapterTimeoutError,
    AgentTurn,
    SessionContext,
    ToolOutput,
    Usage,
)
from tau_bench.runner.deadlines import episode_deadline, with_turn_deadline


class CloseHangs:
    async def start(self, session: SessionContext) -> None:
        pass

    async def send(self, turn: Any) -> AgentTurn:
        return AgentTurn(messages=["done"], end_conversation=True)

    async def close(self) -> None:
        await asyncio.Event().wait()


class NoTools:
    def execute(self, name: str, kwargs: Any) -> ToolOutput:
        return ToolOutput("none", is_error=True)

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


async def test_a_close_that_never_returns_times_out_at_the_turn_deadline() -> None:
    adapter = with_turn_deadline(CloseHangs(), 0.05)
    with pytest.raises(AdapterTimeoutError, match="agent close"):
        async with asyncio.timeout(10):  # the test's own bound, were close not held to one
            await adapter.close()


async def test_the_finished_episode_is_kept_with_a_warning() -> None:
    adapter = with_turn_deadline(CloseHangs(), 0.05)
    result = await episode_deadline(run_episode(adapter, NoTools(), User(), SESSION, "go"), 5)
    assert result.error is None
    assert result.stop_reason == "agent_end"
    assert len(result.warnings) == 1 and "agent close" in result.warnings[0]
