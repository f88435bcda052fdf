"""A conformance kit for adapter authors: run it against your adapter in your tests.

    from tau_adapters.testing import assert_adapter_conforms

    def test_my_adapter_conforms():
        assert_adapter_conforms(lambda: MyAdapter(url=...), session=my_session)

It drives the adapter through the same calls the episode loop makes and checks the
contract: `start` then `send` return well-formed `AgentTurn`s; tool calls have ids,
names and JSON-serialisable arguments; tool results (including error results) are
accepted; a `send` cancelled mid-flight does not break `close`; `close` is idempotent.
Checks that need the agent to call a tool are reported as skipped (not failed) when it
never does, unless `require_tool_call=True`.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tau_adapters.protocol import (
    AgentAdapter,
    AgentTurn,
    SessionContext,
    ToolCall,
    ToolResult,
    ToolResults,
    UserTurn,
)

ECHO_TOOL = {
    "type": "function",
    "function": {
        "name": "echo",
        "description": "Echo the given text back.",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
}


@dataclass
class ConformanceReport:
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed

    def summary(self) -> str:
        lines = [f"PASS {p}" for p in self.passed]
        lines += [f"FAIL {f}" for f in self.failed]
        lines += [f"SKIP {s}" for s in self.skipped]
        return "\n".join(lines)


def default_session() -> SessionContext:
    return SessionContext(
        session_id=str(uuid.uuid4()),
        domain="conformance",
        tools=[ECHO_TOOL],
        policy="You are a test agent. Use the echo tool when asked.",
        task_id="conformance-0",
        user_id="user_0",
    )


def _turn_problems(turn: Any) -> list[str]:
    if not isinstance(turn, AgentTurn):
        return [f"send returned {type(turn).__name__}, expected AgentTurn"]
    problems = []
    if not isinstance(turn.messages, list) or not all(isinstance(m, str) for m in turn.messages):
        problems.append("AgentTurn.messages must be a list of str")
    if not isinstance(turn.tool_calls, list):
        problems.append("AgentTurn.tool_calls must be a list")
        return problems
    ids = set()
    for call in turn.tool_calls:
        if not isinstance(call, ToolCall):
            problems.append(f"tool call is {type(call).__name__}, expected ToolCall")
            continue
        if not isinstance(call.id, str) or not call.id:
            problems.append("tool call without a string id")
        if call.id in ids:
            problems.append(f"duplicate tool call id {call.id!r} in one turn")
        ids.add(call.id)
        if not isinstance(call.name, str) or not call.name:
            problems.append("tool call without a name")
        try:
            json.dumps(call.arguments)
        except (TypeError, ValueError):
            problems.append(f"arguments of {call.name!r} are not JSON-serialisable")
    if not turn.messages and not turn.tool_calls and not (turn.end_conversation or turn.handoff):
        problems.append("turn has no message, no tool call and does not end the conversation")
    return problems


async def check_adapter(
    factory: Callable[[], AgentAdapter],
    *,
    session: SessionContext | None = None,
    user_messages: list[str] | None = None,
    tool_output: Callable[[ToolCall], str] | None = None,
    require_tool_call: bool = False,
    timeout: float = 30.0,
) -> ConformanceReport:
    """Run the contract checks against adapters made by `factory` (one per check)."""
    report = ConformanceReport()
    messages = user_messages or ["Hello! Please echo the word 'ping' with your tool."]
    output = tool_output or (lambda call: json.dumps(call.arguments, default=str))

    def new_session() -> SessionContext:
        base = session or default_session()
        return SessionContext(**{**base.__dict__, "session_id": str(uuid.uuid4())})

    async def guarded(name: str, coro: Any) -> Any:
        try:
            return await asyncio.wait_for(coro, timeout)
        except TimeoutError:
            report.failed.append(f"{name}: timed out after {timeout} s")
        except Exception as exc:
            report.failed.append(f"{name}: raised {type(exc).__name__}: {exc}")
        return None

    # 1. start / send / close, and a tool round trip with normal then error results.
    adapter = factory()
    await guarded("start", adapter.start(new_session()))
    saw_tool_call = False
    if not report.failed:
        turn = await guarded("send(UserTurn)", adapter.send(UserTurn(messages[0])))
        if turn is not None:
            problems = _turn_problems(turn)
            (
                report.failed.extend(f"send(UserTurn): {p}" for p in problems)
                if problems
                else report.passed.append("start + send(UserTurn) returns an AgentTurn")
            )
        rounds = 0
        error_round_done = False
        while turn is not None and isinstance(turn, AgentTurn) and turn.tool_calls and rounds < 5:
            saw_tool_call = True
            rounds += 1
            as_error = not error_round_done and rounds == 2
            results = [
                ToolResult(
                    c.id,
                    c.name,
                    "Error: simulated tool failure" if as_error else output(c),
                    is_error=as_error,
                )
                for c in turn.tool_calls
            ]
            error_round_done = error_round_done or as_error
            turn = await guarded("send(ToolResults)", adapter.send(ToolResults(results)))
            if turn is not None:
                problems = _turn_problems(turn)
                report.failed.extend(f"send(ToolResults): {p}" for p in problems)
        if saw_tool_call and not any(f.startswith("send(ToolResults)") for f in report.failed):
            report.passed.append("tool results round trip")
        elif not saw_tool_call:
            (report.failed if require_tool_call else report.skipped).append(
                "tool round trip: the agent never called a tool"
            )
        for text in messages[1:]:
            if turn is None or turn.end_conversation or turn.handoff:
                break
            turn = await guarded("send(UserTurn) follow-up", adapter.send(UserTurn(text)))
    await guarded("close", adapter.close())
    closed_twice = await guarded("close twice", adapter.close())
    del closed_twice
    if not any(f.startswith("close") for f in report.failed):
        report.passed.append("close is idempotent")

    # 2. A send cancelled mid-flight must not break close.
    adapter = factory()
    started = await guarded("start (cancellation check)", adapter.start(new_session()))
    del started
    task = asyncio.ensure_future(adapter.send(UserTurn(messages[0])))
    await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    except Exception as exc:
        report.failed.append(f"cancelled send raised {type(exc).__name__}: {exc}")
    before = len(report.failed)
    await guarded("close after cancelled send", adapter.close())
    if len(report.failed) == before:
        report.passed.append("close after a cancelled send")
    return report


def assert_adapter_conforms(
    factory: Callable[[], AgentAdapter], **kwargs: Any
) -> ConformanceReport:
    """pytest helper: run `check_adapter` and fail with the list of violations."""
    report = asyncio.run(check_adapter(factory, **kwargs))
    if not report.ok:
        raise AssertionError("adapter does not conform:\n" + report.summary())
    return report
