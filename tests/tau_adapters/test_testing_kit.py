"""The conformance kit accepts a well-behaved adapter and rejects broken ones."""

from __future__ import annotations

import asyncio

import pytest

from tau_adapters.protocol import AgentTurn, SessionContext, ToolCall, ToolResults
from tau_adapters.testing import assert_adapter_conforms, check_adapter


class EchoAgent:
    """Calls the echo tool once, then answers with what the tool returned."""

    def __init__(self) -> None:
        self.closed = 0

    async def start(self, session: SessionContext) -> None:
        self.session = session

    async def send(self, turn):  # type: ignore[no-untyped-def]
        if isinstance(turn, ToolResults):
            return AgentTurn(messages=[f"tool said {turn.results[0].content}"])
        await asyncio.sleep(0)
        return AgentTurn(tool_calls=[ToolCall(id="c1", name="echo", arguments={"text": "ping"})])

    async def close(self) -> None:
        self.closed += 1


class BadTypes(EchoAgent):
    async def send(self, turn):  # type: ignore[no-untyped-def]
        return AgentTurn(messages=[42], tool_calls=[ToolCall(id="", name="echo", arguments={1j})])  # type: ignore[list-item]


class CrashOnToolResults(EchoAgent):
    async def send(self, turn):  # type: ignore[no-untyped-def]
        if isinstance(turn, ToolResults) and turn.results[0].is_error:
            raise RuntimeError("cannot handle tool errors")
        if isinstance(turn, ToolResults):
            return AgentTurn(
                tool_calls=[ToolCall(id="c2", name="echo", arguments={"text": "again"})]
            )
        return await super().send(turn)


class CloseTwiceFails(EchoAgent):
    async def close(self) -> None:
        self.closed += 1
        if self.closed > 1:
            raise RuntimeError("already closed")


class TextOnly:
    async def start(self, session: SessionContext) -> None:
        pass

    async def send(self, turn):  # type: ignore[no-untyped-def]
        return AgentTurn(messages=["hello"])

    async def close(self) -> None:
        pass


def test_well_behaved_adapter_passes() -> None:
    report = assert_adapter_conforms(EchoAgent)
    assert "tool results round trip" in report.passed
    assert "close after a cancelled send" in report.passed


@pytest.mark.parametrize(
    ("adapter", "expected"),
    [
        (BadTypes, "messages must be a list of str"),
        (CrashOnToolResults, "cannot handle tool errors"),
        (CloseTwiceFails, "already closed"),
    ],
)
def test_broken_adapters_fail(adapter: type, expected: str) -> None:
    with pytest.raises(AssertionError, match=expected):
        assert_adapter_conforms(adapter)


async def test_text_only_adapter_skips_tool_round_trip_unless_required() -> None:
    report = await check_adapter(TextOnly)
    assert report.ok and report.skipped
    strict = await check_adapter(TextOnly, require_tool_call=True)
    assert not strict.ok


async def test_oracle_agent_conforms(airline) -> None:  # type: ignore[no-untyped-def]
    from tau_bench.agents.oracle import OracleAgent
    from tau_bench.episode import session_for

    task = airline.tasks("test")[0]
    session = session_for(airline, task, 0, 0)
    report = await check_adapter(OracleAgent, session=session, require_tool_call=True)
    assert report.ok, report.summary()
