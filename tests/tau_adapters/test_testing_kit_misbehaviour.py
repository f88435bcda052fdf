"""The conformance kit reports every misbehaviour it checks as a FAIL line, never raises,
and fails whatever the runner would refuse (both use `turn_problems`)."""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

import pytest

from tau_adapters.protocol import AgentTurn, SessionContext, ToolCall, Usage
from tau_adapters.testing import check_adapter


class Base:
    async def start(self, session: SessionContext) -> None:
        pass

    async def send(self, turn: Any) -> Any:
        return AgentTurn(messages=["hi"])

    async def close(self) -> None:
        pass


class DictCalls(Base):
    async def send(self, turn: Any) -> Any:
        return AgentTurn(tool_calls=[{"id": "1", "name": "echo", "arguments": {}}])  # type: ignore[list-item]


class NonListCalls(Base):
    async def send(self, turn: Any) -> Any:
        return AgentTurn(tool_calls={"a": 1})  # type: ignore[arg-type]


class InitRaises(Base):
    def __init__(self) -> None:
        raise RuntimeError("init boom")


class SyncMethods:
    def start(self, session: SessionContext) -> None:
        return None

    def send(self, turn: Any) -> AgentTurn:
        return AgentTurn(messages=["hi"])

    def close(self) -> None:
        return None


class Surrogate(Base):
    async def send(self, turn: Any) -> Any:
        return AgentTurn(messages=["bad \ud800"])


class NaNUsage(Base):
    async def send(self, turn: Any) -> Any:
        return AgentTurn(messages=["x"], usage=Usage(cost=math.nan))


class DictUsage(Base):
    async def send(self, turn: Any) -> Any:
        return AgentTurn(messages=["x"], usage={"cost": 1})  # type: ignore[arg-type]


class NoneRaw(Base):
    async def send(self, turn: Any) -> Any:
        return AgentTurn(messages=["x"], raw=None, extra=None)  # type: ignore[arg-type]


class ReturnsNone(Base):
    async def send(self, turn: Any) -> Any:
        return None


BLOCK = 0.3  # how long the blocking adapter holds the event loop; the kit's timeout is less


class BlocksTheLoop(Base):
    async def send(self, turn: Any) -> Any:
        time.sleep(BLOCK)  # the misbehaviour under test: a blocking call in async code
        return AgentTurn(messages=["late"])


@pytest.mark.parametrize(
    ("adapter", "expected"),
    [
        (DictCalls, "tool_calls[0] is dict, expected ToolCall"),
        (NonListCalls, "tool_calls is dict"),
        (InitRaises, "the factory raised RuntimeError: init boom"),
        (SyncMethods, "not an awaitable"),
        (Surrogate, "lone surrogate"),
        (NaNUsage, "usage cost=nan is not a finite number >= 0"),
        (DictUsage, "usage is dict"),
        (NoneRaw, "raw is NoneType"),
        (ReturnsNone, "send returned NoneType, expected AgentTurn"),
    ],
)
async def test_misbehaviour_is_a_reported_failure(adapter: type, expected: str) -> None:
    report = await check_adapter(adapter, timeout=5)
    assert not report.ok
    assert any(expected in line for line in report.failed), report.summary()


async def test_a_send_that_blocks_the_event_loop_fails() -> None:
    report = await check_adapter(BlocksTheLoop, timeout=BLOCK / 3)
    assert any("blocks the event loop" in line for line in report.failed), report.summary()


async def test_nan_in_model_made_arguments_is_not_the_adapters_fault() -> None:
    class NaNArguments(Base):
        n = 0

        async def send(self, turn: Any) -> Any:
            self.n += 1
            if self.n == 1:
                return AgentTurn(tool_calls=[ToolCall("c1", "echo", {"text": math.nan})])
            await asyncio.sleep(0)
            return AgentTurn(messages=["done"])

    report = await check_adapter(NaNArguments, timeout=5)
    assert report.ok, report.summary()
