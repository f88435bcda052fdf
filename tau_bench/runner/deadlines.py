"""Deadlines around every turn and every episode.

Why: a bot that drips one byte every two seconds, or streams keep-alives, never raises
and never finishes; without a deadline one such episode holds a run forever. The runner
wraps each episode's adapter and user (`with_turn_deadline`, `user_with_deadline`) so
that one agent reply, one user reply, or the adapter's session start or close may take at
most `--turn-timeout` seconds (a close past it is only a warning on the record), and
the whole episode at most `--episode-timeout` (`episode_deadline`). Expiry is an
`AdapterTimeoutError` (kind `agent_timeout`, class unavailable: excluded from scores,
re-run by `--resume`); a user reply past its deadline is a `UserTimeoutError` (ours,
harness). Other episodes are unaffected. Adapters keep their own per-call deadlines.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

from tau_adapters.protocol import AdapterError, AdapterTimeoutError

T = TypeVar("T")


class UserTimeoutError(AdapterError):
    """The user simulator did not reply within the turn deadline (our side: harness)."""

    kind = "user_timeout"

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


class EpisodeTimeoutError(AdapterTimeoutError):
    """The whole episode outlived `--episode-timeout` (recorded as the agent's timeout)."""


async def _within(awaitable: Awaitable[T], seconds: float, error: Exception) -> T:
    """`awaitable` or `error` once `seconds` pass; its own TimeoutErrors stay its own."""
    try:
        async with asyncio.timeout(seconds) as scope:
            return await awaitable
    except TimeoutError:
        if scope.expired():
            raise error from None
        raise


class _Deadlined:
    """Delegates everything to the wrapped object (optional attributes included)."""

    def __init__(self, inner: Any, seconds: float) -> None:
        self._inner = inner
        self._seconds = seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _AdapterWithDeadline(_Deadlined):
    async def start(self, session: Any) -> None:
        await _within(
            self._inner.start(session),
            self._seconds,
            AdapterTimeoutError(f"agent session start: no answer within {self._seconds:g} s"),
        )

    async def send(self, turn: Any) -> Any:
        return await _within(
            self._inner.send(turn),
            self._seconds,
            AdapterTimeoutError(
                f"agent reply: not finished within {self._seconds:g} s (--turn-timeout)"
            ),
        )

    async def close(self) -> None:
        """Close within the turn deadline too: the conversation is over by then (it is
        scored next), and a close that never returns must neither turn it into a timeout
        (the loop records a failed close as a warning) nor hold the run."""
        await _within(
            self._inner.close(),
            self._seconds,
            AdapterTimeoutError(
                f"agent close: not finished within {self._seconds:g} s (--turn-timeout)"
            ),
        )


class _UserWithDeadline(_Deadlined):
    @property
    def usage(self) -> Any:
        return self._inner.usage

    async def start(self, instruction: str) -> Any:
        return await self.reply_within(self._inner.start(instruction))

    async def reply(self, agent_message: str) -> Any:
        return await self.reply_within(self._inner.reply(agent_message))

    async def tool_results(self, results: Any) -> Any:
        """A user with tools (τ³ telecom) answering its own tools' observations."""
        return await self.reply_within(self._inner.tool_results(results))

    def bind_episode(self, task: Any, tools: list[dict[str, Any]]) -> None:
        bind = getattr(self._inner, "bind_episode", None)
        if bind is not None:
            bind(task, tools)

    async def reply_within(self, awaitable: Awaitable[Any]) -> Any:
        return await _within(
            awaitable,
            self._seconds,
            UserTimeoutError(
                f"user reply: not finished within {self._seconds:g} s (--turn-timeout)"
            ),
        )


def with_turn_deadline(adapter: T, seconds: float) -> T:
    """`adapter` whose session start, every `send` and its close must finish within
    `seconds`."""
    return _AdapterWithDeadline(adapter, seconds)  # type: ignore[return-value]


def user_with_deadline(user: T, seconds: float) -> T:
    """`user` whose every reply must come within `seconds`."""
    return _UserWithDeadline(user, seconds)  # type: ignore[return-value]


async def episode_deadline(awaitable: Awaitable[T], seconds: float) -> T:
    """`awaitable` (one episode), as an agent timeout once `seconds` pass."""
    return await _within(
        awaitable,
        seconds,
        EpisodeTimeoutError(f"episode not finished within {seconds:g} s (--episode-timeout)"),
    )
