"""A conformance kit for adapter authors: run it against your adapter in your tests.

    from tau_adapters.testing import assert_adapter_conforms

    def test_my_adapter_conforms():
        assert_adapter_conforms(lambda: MyAdapter(url=...), session=my_session)

It drives the adapter through the same calls the episode loop makes and checks the
contract: the methods are `async`; `start` then `send` return well-formed `AgentTurn`s
(the runner's own check, `tau_adapters.protocol.turn_problems`, plus: tool calls have
non-empty, distinct ids and names; messages are encodable text; usage holds finite
numbers >= 0); tool results (including error results) are accepted; no call blocks the
event loop past `timeout`; a `send` cancelled mid-flight does not break `close`; `close`
is idempotent. Every violation is reported, never raised. Checks that need the agent to
call a tool are reported as skipped (not failed) when it never does, unless
`require_tool_call=True`.
"""

from __future__ import annotations

import asyncio
import inspect
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
    clean_usage,
    turn_problems,
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


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _turn_problems(turn: Any) -> list[str]:
    """The runner's own checks (`turn_problems`: a turn failing them ends the episode as
    the agent's protocol error), then what the runner tolerates but a good adapter avoids:
    tool calls without an id or a name, ids repeated within a turn, lone surrogates in
    messages (written as U+FFFD), usage no reader accepts (counted as 0), empty turns."""
    problems = turn_problems(turn)
    if problems:
        return problems
    ids = set()
    for call in turn.tool_calls:
        if not call.id:
            problems.append("tool call with an empty id")
        if call.id in ids:
            problems.append(f"duplicate tool call id {call.id!r} in one turn")
        ids.add(call.id)
        if not call.name:
            problems.append("tool call with an empty name")
    if any(_has_lone_surrogate(m) for m in turn.messages):
        problems.append("a message holds a lone surrogate (not encodable as UTF-8)")
    if turn.usage is not None:
        problems.extend(
            f"usage {item} is not a finite number >= 0" for item in clean_usage(turn.usage)[1]
        )
    if not turn.messages and not turn.tool_calls and not (turn.end_conversation or turn.handoff):
        problems.append("turn has no message, no tool call and does not end the conversation")
    return problems


def _conforming_turn(turn: Any) -> AgentTurn | None:
    """`turn` when the checks may go on with it (a well-formed AgentTurn), else None."""
    return turn if not turn_problems(turn) else None


_FAILED = object()


class _Checker:
    """Calls into adapters as the episode loop does and reports, never raises, what goes
    wrong: an exception, a method that is not `async`, a call past the timeout, or one
    that returned only after it (it blocked the event loop: no deadline can stop it)."""

    def __init__(self, report: ConformanceReport, timeout: float) -> None:
        self.report = report
        self.timeout = timeout

    def make(self, name: str, factory: Callable[[], AgentAdapter]) -> AgentAdapter | None:
        try:
            return factory()
        except Exception as exc:
            self.report.failed.append(f"{name}: the factory raised {type(exc).__name__}: {exc}")
            return None

    def awaitable(self, name: str, method: Any, *args: Any) -> Any:
        """`method(*args)` if it returned an awaitable; None (a reported failure) if not."""
        try:
            awaitable = method(*args)
        except Exception as exc:
            self.report.failed.append(f"{name}: raised {type(exc).__name__}: {exc}")
            return None
        if not inspect.isawaitable(awaitable):
            self.report.failed.append(
                f"{name}: returned {type(awaitable).__name__}, not an awaitable "
                "(the adapter's methods must be `async def`)"
            )
            return None
        return awaitable

    async def call(self, name: str, method: Any, *args: Any) -> Any:
        """What `method(*args)` returned, or `_FAILED` (reported)."""
        awaitable = self.awaitable(name, method, *args)
        if awaitable is None:
            return _FAILED
        loop = asyncio.get_running_loop()
        began = loop.time()
        try:
            result = await asyncio.wait_for(awaitable, self.timeout)
        except TimeoutError:
            self.report.failed.append(f"{name}: timed out after {self.timeout:g} s")
            return _FAILED
        except Exception as exc:
            self.report.failed.append(f"{name}: raised {type(exc).__name__}: {exc}")
            return _FAILED
        took = loop.time() - began
        if took >= self.timeout:
            self.report.failed.append(
                f"{name}: returned only after {took:.1f} s, past the {self.timeout:g} s "
                "timeout: it blocks the event loop (time.sleep, blocking I/O in async code) "
                "or ignores cancellation, and no deadline of the runner can stop it"
            )
        return result


async def check_adapter(
    factory: Callable[[], AgentAdapter],
    *,
    session: SessionContext | None = None,
    user_messages: list[str] | None = None,
    tool_output: Callable[[ToolCall], str] | None = None,
    require_tool_call: bool = False,
    timeout: float = 30.0,
) -> ConformanceReport:
    """Run the contract checks against adapters made by `factory` (one per check).

    Every violation is a FAIL line of the report, never an exception of the kit."""
    report = ConformanceReport()
    checker = _Checker(report, timeout)
    messages = user_messages or ["Hello! Please echo the word 'ping' with your tool."]
    output = tool_output or (lambda call: json.dumps(call.arguments, default=str))

    def new_session() -> SessionContext:
        base = session or default_session()
        return SessionContext(**{**base.__dict__, "session_id": str(uuid.uuid4())})

    adapter = checker.make("new adapter", factory)
    if adapter is not None:
        await _round_trips(checker, adapter, new_session(), messages, output, require_tool_call)
    adapter = checker.make("new adapter (cancellation check)", factory)
    if adapter is not None:
        await _cancelled_send(checker, adapter, new_session(), messages[0])
    return report


async def _sent(checker: _Checker, name: str, adapter: AgentAdapter, turn: Any) -> Any:
    """`adapter.send(turn)` with its problems reported; the turn, or None when unusable."""
    answer = await checker.call(name, adapter.send, turn)
    if answer is _FAILED:
        return None
    problems = _turn_problems(answer)
    checker.report.failed.extend(f"{name}: {p}" for p in problems)
    return _conforming_turn(answer)


async def _round_trips(
    checker: _Checker,
    adapter: AgentAdapter,
    session: SessionContext,
    messages: list[str],
    output: Callable[[ToolCall], str],
    require_tool_call: bool,
) -> None:
    """1. start / send / close, and a tool round trip with normal then error results."""
    report = checker.report
    await checker.call("start", adapter.start, session)
    saw_tool_call = False
    if not report.failed:
        before = len(report.failed)
        turn = await _sent(checker, "send(UserTurn)", adapter, UserTurn(messages[0]))
        if len(report.failed) == before:
            report.passed.append("start + send(UserTurn) returns an AgentTurn")
        rounds = 0
        error_round_done = False
        while turn is not None and turn.tool_calls and rounds < 5:
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
            turn = await _sent(checker, "send(ToolResults)", adapter, ToolResults(results))
        if saw_tool_call and not any(f.startswith("send(ToolResults)") for f in report.failed):
            report.passed.append("tool results round trip")
        elif not saw_tool_call:
            (report.failed if require_tool_call else report.skipped).append(
                "tool round trip: the agent never called a tool"
            )
        for text in messages[1:]:
            if turn is None or turn.end_conversation or turn.handoff:
                break
            turn = await _sent(checker, "send(UserTurn) follow-up", adapter, UserTurn(text))
    await checker.call("close", adapter.close)
    await checker.call("close twice", adapter.close)
    if not any(f.startswith("close") for f in report.failed):
        report.passed.append("close is idempotent")


async def _cancelled_send(
    checker: _Checker, adapter: AgentAdapter, session: SessionContext, message: str
) -> None:
    """2. A send cancelled mid-flight must not break close."""
    report = checker.report
    await checker.call("start (cancellation check)", adapter.start, session)
    awaitable = checker.awaitable("send (cancellation check)", adapter.send, UserTurn(message))
    if awaitable is None:
        return
    task = asyncio.ensure_future(awaitable)
    await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    except Exception as exc:
        report.failed.append(f"cancelled send raised {type(exc).__name__}: {exc}")
    before = len(report.failed)
    await checker.call("close after cancelled send", adapter.close)
    if len(report.failed) == before:
        report.passed.append("close after a cancelled send")


def assert_adapter_conforms(
    factory: Callable[[], AgentAdapter], **kwargs: Any
) -> ConformanceReport:
    """pytest helper: run `check_adapter` and fail with the list of violations."""
    report = asyncio.run(check_adapter(factory, **kwargs))
    if not report.ok:
        raise AssertionError("adapter does not conform:\n" + report.summary())
    return report
