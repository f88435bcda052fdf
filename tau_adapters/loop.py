"""run_episode: the one conversation loop that drives every agent.

user -> agent.send -> while the turn has tool calls: run each on the executor (errors
are observations) -> agent.send(results) -> the agent's text goes to the user -> ...
until the user says ###STOP###, the agent ends or hands off, a terminate tool runs, or
`max_steps` agent actions have happened. Steps are counted as the original counted
them: every tool call and every message to the user is one step.

A user with tools of its own (`user_executor`; τ³ telecom) may answer with tool calls
(`UserReply`): they run on the user's side, their observations go back to the user only,
and the loop asks it again until it says something; the agent sees only those words.

Adapter and user-simulator exceptions end the episode with a typed `EpisodeError`
in the result; they never propagate (cancellation does, after `close`). So does a `send`
that returns something other than a well-formed `AgentTurn` (`turn_problems`): a
protocol error of the agent. A turn's usage that no results reader accepts (a NaN cost, a
negative token count) is counted as 0, with a warning: bookkeeping never ends an episode.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tau_adapters.conversation import (
    DEFAULT_MAX_STEPS,
    ERROR,
    MAX_STEPS,
    MAX_USER_TURNS,
    Conversation,
)
from tau_adapters.protocol import (
    AdapterConfigError,
    AdapterError,
    AgentAdapter,
    AgentTurn,
    AgentTurnError,
    SessionContext,
    ToolExecutor,
    ToolResults,
    Usage,
    UserOutput,
    UserReply,
    UserSimulator,
    UserTurn,
    clean_usage,
    turn_problems,
)

__all__ = ["DEFAULT_MAX_STEPS", "EpisodeError", "EpisodeResult", "TurnRecord", "run_episode"]
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
    user_executor: ToolExecutor | None = None,
) -> EpisodeResult:
    """Run one conversation to its end and return its trajectory.

    `user_executor` runs the tool calls of a user that has tools (its side of the
    environment); without one, a user's tool call ends the episode with a user error."""
    result = EpisodeResult()
    conv = Conversation(
        executor, max_steps=max_steps, user_executor=user_executor, messages=result.messages
    )
    conv.stop_tokens = tuple(getattr(user, "stop_tokens", conv.stop_tokens))
    started = time.perf_counter()
    conv.system(session.policy)
    started_adapter = False
    try:
        user_text = await _user_words(result, conv, user, user.start(instruction))
        stopped = conv.done or conv.user_said(user_text)
        await _guarded("agent", adapter.start(session))
        started_adapter = True
        if stopped:
            return result
        pending: UserTurn | ToolResults = UserTurn(user_text)
        while True:
            t0 = time.perf_counter()
            turn = _checked_turn(await _guarded("agent", adapter.send(pending)))
            _record_agent_turn(result, turn, pending, time.perf_counter() - t0)
            calls = list(turn.tool_calls)
            if max_tool_calls_per_turn is not None and len(calls) > max_tool_calls_per_turn:
                result.dropped_tool_calls += len(calls) - max_tool_calls_per_turn
                calls = calls[:max_tool_calls_per_turn]
            if calls:
                results = conv.agent_tool_calls(calls, turn.text)
                if conv.agent_signal(end=turn.end_conversation, handoff=turn.handoff):
                    return result
                pending = ToolResults(results)
                continue
            # No tool calls: the text goes to the user.
            if conv.agent_message(turn.text, end=turn.end_conversation, handoff=turn.handoff):
                return result
            if max_user_turns is not None and conv.user_turns >= max_user_turns:
                conv.end(MAX_USER_TURNS)
                return result
            user_text = await _user_words(result, conv, user, user.reply(turn.text))
            if conv.done or conv.user_said(user_text):
                return result
            pending = UserTurn(user_text)
    except _EpisodeFailed as failed:
        result.error = failed.error
        conv.end(ERROR)
        return result
    finally:
        result.steps = conv.steps
        result.user_turns = conv.user_turns
        result.stop_reason = conv.stop_reason
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


async def _timed_user_turn(result: EpisodeResult, call: Awaitable[UserOutput]) -> UserReply:
    t0 = time.perf_counter()
    out = await _guarded("user", call)
    result.turns.append(TurnRecord("user", time.perf_counter() - t0))
    return out if isinstance(out, UserReply) else UserReply(text=str(out))


async def _user_words(
    result: EpisodeResult, conv: Conversation, user: UserSimulator, call: Awaitable[UserOutput]
) -> str:
    """The user's next words for the agent, after running any tool calls of its own.

    Each round of calls runs on the user's executor and its observations go back to the
    user alone. A user that keeps calling tools past the step limit is cut off
    (`max_steps`: the original counted the user's tool calls as steps too)."""
    reply = await _timed_user_turn(result, call)
    calls_made = 0
    while reply.tool_calls:
        if conv.user_executor is None:
            raise _EpisodeFailed(
                _error_from(AdapterConfigError("the user called tools but has none here"), "user")
            )
        results = conv.user_tool_calls(list(reply.tool_calls), reply.text)
        calls_made += len(results)
        if calls_made >= conv.max_steps:
            conv.end(MAX_STEPS)
            return ""
        respond = getattr(user, "tool_results", None)
        if respond is None:
            raise _EpisodeFailed(
                _error_from(AdapterConfigError("the user cannot take tool results"), "user")
            )
        reply = await _timed_user_turn(result, respond(results))
    return reply.text


def _checked_turn(turn: Any) -> AgentTurn:
    """`turn` if it is a well-formed `AgentTurn`; otherwise the episode ends with the
    adapter's protocol error naming its first mistake (not an AttributeError of ours, nor
    a string recorded letter by letter)."""
    problems = turn_problems(turn)
    if not problems:
        return turn  # type: ignore[no-any-return]
    more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
    raise _EpisodeFailed(_error_from(AgentTurnError(f"adapter bug: {problems[0]}{more}"), "agent"))


def _usable_usage(result: EpisodeResult, usage: Usage | None) -> Usage | None:
    """`usage` with the values no results reader accepts counted as 0; the first drop of
    each field is noted in the episode's warnings (once: a bot may do it every turn)."""
    if usage is None:
        return None
    usage, dropped = clean_usage(usage)
    for item in dropped:
        name = item.split("=", 1)[0]
        if not any(w.startswith(f"agent usage: {name}=") for w in result.warnings):
            result.warnings.append(f"agent usage: {item} is not a finite number >= 0; counted as 0")
    return usage


def _record_agent_turn(
    result: EpisodeResult, turn: AgentTurn, pending: UserTurn | ToolResults, latency: float
) -> None:
    usage = _usable_usage(result, turn.usage)
    result.agent_usage.add(usage)
    result.turns.append(
        TurnRecord(
            "agent",
            latency,
            input_kind="user" if isinstance(pending, UserTurn) else "tool_results",
            raw=list(turn.raw),
            usage=usage.to_dict() if usage else None,
            extra=dict(turn.extra),
        )
    )


def _usage_of(user: UserSimulator) -> Usage:
    try:
        usage = user.usage
    except Exception:
        return Usage()
    return usage if isinstance(usage, Usage) else Usage()
