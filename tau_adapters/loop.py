"""run_episode: the one conversation loop that drives every agent.

user -> agent.send -> while the turn has tool calls: run each on the executor (errors
are observations) -> agent.send(results) -> the agent's text goes to the user -> ...
until the user says ###STOP###, the agent ends or hands off, a terminate tool runs, or
`max_steps` agent actions have happened. Steps are counted as the original counted
them: every tool call and every message to the user is one step.

Adapter and user-simulator exceptions end the episode with a typed `EpisodeError`
in the result; they never propagate (cancellation does, after `close`).
"""

from __future__ import annotations

import asyncio
import json
import time
import traceback
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tau_adapters.protocol import (
    STOP_TOKEN,
    AdapterError,
    AgentAdapter,
    AgentTurn,
    SessionContext,
    ToolCall,
    ToolExecutor,
    ToolResult,
    ToolResults,
    Usage,
    UserSimulator,
    UserTurn,
)

DEFAULT_MAX_STEPS = 30
T = TypeVar("T")


@dataclass
class EpisodeError:
    """Why an episode could not finish: `source` is agent or user; `kind` a short type."""

    source: str
    kind: str
    message: str
    retryable: bool = False
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "kind": self.kind,
            "message": self.message,
            "retryable": self.retryable,
            "detail": self.detail,
        }


@dataclass
class TurnRecord:
    """One exchange with the agent or the user, with its latency in seconds."""

    role: str  # "agent" or "user"
    latency: float
    input_kind: str = ""
    raw: list[Any] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "latency": self.latency}
        if self.input_kind:
            out["input"] = self.input_kind
        if self.raw:
            out["raw"] = self.raw
        if self.usage:
            out["usage"] = self.usage
        if self.extra:
            out["extra"] = self.extra
        return out


@dataclass
class EpisodeResult:
    """The trajectory (OpenAI-style messages), why it stopped, costs and any error."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    turns: list[TurnRecord] = field(default_factory=list)
    stop_reason: str = ""
    steps: int = 0
    user_turns: int = 0
    agent_usage: Usage = field(default_factory=Usage)
    user_usage: Usage = field(default_factory=Usage)
    error: EpisodeError | None = None
    duration: float = 0.0
    dropped_tool_calls: int = 0
    warnings: list[str] = field(default_factory=list)


def _error_from(exc: BaseException, source: str) -> EpisodeError:
    if isinstance(exc, AdapterError):
        kind, retryable = exc.kind, exc.retryable
    else:
        kind = type(exc).__name__
        retryable = bool(getattr(exc, "retryable", True))
    tb = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return EpisodeError(
        source=source, kind=kind, message=str(exc) or tb, retryable=retryable, detail=tb
    )


def _json_args(arguments: Any) -> str:
    try:
        return json.dumps(arguments)
    except (TypeError, ValueError):
        return json.dumps(str(arguments))


class _EpisodeFailed(Exception):
    """Internal: an adapter or user call failed; carries the typed error."""

    def __init__(self, error: EpisodeError) -> None:
        super().__init__(error.message)
        self.error = error


async def _guarded(source: str, awaitable: Awaitable[T]) -> T:
    """Await a call into the agent or the user; failures become `_EpisodeFailed`."""
    try:
        return await awaitable
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        raise _EpisodeFailed(_error_from(exc, source)) from exc


def _is_error_observation(observation: str) -> bool:
    return observation.startswith("Error:") or observation.startswith("Unknown action")


async def run_episode(
    adapter: AgentAdapter,
    executor: ToolExecutor,
    user: UserSimulator,
    session: SessionContext,
    instruction: str,
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    max_tool_calls_per_turn: int | None = None,
    max_user_turns: int | None = None,
) -> EpisodeResult:
    """Run one conversation to its end and return its trajectory."""
    result = EpisodeResult()
    started = time.perf_counter()
    if session.policy:
        result.messages.append({"role": "system", "content": session.policy})
    started_adapter = False
    try:
        user_text = await _timed_user_turn(result, user.start(instruction))
        await _guarded("agent", adapter.start(session))
        started_adapter = True
        if STOP_TOKEN in user_text:
            result.stop_reason = "user_stop"
            return result
        pending: UserTurn | ToolResults = UserTurn(user_text)
        while True:
            t0 = time.perf_counter()
            turn: AgentTurn = await _guarded("agent", adapter.send(pending))
            _record_agent_turn(result, turn, pending, time.perf_counter() - t0)
            calls = list(turn.tool_calls)
            if max_tool_calls_per_turn is not None and len(calls) > max_tool_calls_per_turn:
                result.dropped_tool_calls += len(calls) - max_tool_calls_per_turn
                calls = calls[:max_tool_calls_per_turn]
            text = turn.text
            if calls:
                results, terminated = _run_tool_calls(result, executor, calls, text, max_steps)
                if terminated:
                    result.stop_reason = "terminate_tool"
                elif result.steps >= max_steps:
                    result.stop_reason = "max_steps"
                elif turn.end_conversation or turn.handoff:
                    result.stop_reason = "agent_handoff" if turn.handoff else "agent_end"
                else:
                    pending = ToolResults(results)
                    continue
                return result
            # No tool calls: the text goes to the user.
            result.messages.append({"role": "assistant", "content": text})
            executor.respond(text)
            result.steps += 1
            if turn.handoff:
                result.stop_reason = "agent_handoff"
            elif turn.end_conversation:
                result.stop_reason = "agent_end"
            elif result.steps >= max_steps:
                result.stop_reason = "max_steps"
            elif max_user_turns is not None and result.user_turns >= max_user_turns:
                result.stop_reason = "max_user_turns"
            else:
                user_text = await _timed_user_turn(result, user.reply(text))
                if STOP_TOKEN not in user_text:
                    pending = UserTurn(user_text)
                    continue
                result.stop_reason = "user_stop"
            return result
    except _EpisodeFailed as failed:
        result.error = failed.error
        result.stop_reason = "error"
        return result
    finally:
        result.user_usage = _usage_of(user)
        result.duration = time.perf_counter() - started
        if started_adapter:
            try:
                await asyncio.shield(adapter.close())
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                # The conversation is over and scored; a failed close is only reported.
                result.warnings.append(f"adapter close failed: {type(exc).__name__}: {exc}")


async def _timed_user_turn(result: EpisodeResult, call: Awaitable[str]) -> str:
    t0 = time.perf_counter()
    text = await _guarded("user", call)
    result.turns.append(TurnRecord("user", time.perf_counter() - t0))
    result.user_turns += 1
    result.messages.append({"role": "user", "content": text})
    return text


def _record_agent_turn(
    result: EpisodeResult, turn: AgentTurn, pending: UserTurn | ToolResults, latency: float
) -> None:
    result.agent_usage.add(turn.usage)
    result.turns.append(
        TurnRecord(
            "agent",
            latency,
            input_kind="user" if isinstance(pending, UserTurn) else "tool_results",
            raw=list(turn.raw),
            usage=turn.usage.to_dict() if turn.usage else None,
            extra=dict(turn.extra),
        )
    )


def _run_tool_calls(
    result: EpisodeResult,
    executor: ToolExecutor,
    calls: list[ToolCall],
    text: str,
    max_steps: int,
) -> tuple[list[ToolResult], bool]:
    """Execute a turn's calls in order; returns the results and whether one terminated."""
    result.messages.append(
        {
            "role": "assistant",
            "content": text or None,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": _json_args(c.arguments)},
                }
                for c in calls
            ],
        }
    )
    if text:
        executor.respond(text)
    results: list[ToolResult] = []
    for call in calls:
        if result.steps >= max_steps:
            break
        observation = executor.execute(call.name, call.arguments)
        result.steps += 1
        results.append(
            ToolResult(call.id, call.name, observation, _is_error_observation(observation))
        )
        result.messages.append(
            {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": observation}
        )
        if executor.is_terminate(call.name):
            return results, True
    return results, False


def _usage_of(user: UserSimulator) -> Usage:
    try:
        usage = user.usage
    except Exception:
        return Usage()
    return usage if isinstance(usage, Usage) else Usage()
