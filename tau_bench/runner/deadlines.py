"""Deadlines around every turn and every episode.

Why: a bot that drips one byte every two seconds, or streams keep-alives, never raises
and never finishes; without a deadline one such episode holds a run forever. The runner
wraps each episode's adapter and user (`with_turn_deadline`, `user_with_deadline`) so
that one agent reply, one user reply, or the adapter's session start or close may take at
most `--turn-timeout` seconds (a close past it is only a warning on the record), and
the whole episode at most `--episode-timeout` (`EpisodeDeadline`). The adapter's close
does not count against the episode's deadline (`EpisodeDeadline.paused`): the
conversation is over when it runs, so a close that outlives what is left of the episode
is a warning too, never the episode's timeout. Expiry is an
`AdapterTimeoutError` (kind `agent_timeout`, class unavailable: excluded from scores,
re-run by `--resume`); a user reply past its deadline is a `UserTimeoutError` (ours,
harness), and an expiry while the finished conversation is being judged is the judge's
(`episode.judge_cut_off`: the trajectory is kept). Other episodes are unaffected. Adapters keep their own per-call deadlines.

A deadline is kept even by a call that swallows its cancellation (`except
CancelledError: pass` in a loop): each adapter or user call runs as its own task, and past
its deadline (or when the run is cancelled, Ctrl-C) it is cancelled and given
`CANCEL_GRACE` seconds to end; a call still running then is stopped by force (its
coroutine closed: `GeneratorExit` at its await) and, should it ignore that too, left
running detached (`ABANDONED`), so neither the episode nor the run waits on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Iterator
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


CANCEL_GRACE = 5.0
"""Seconds a call past its deadline (or cancelled with the run) has to end once
cancelled, before it is stopped by force."""

ABANDONED: set[asyncio.Task[Any]] = set()
"""Calls stopped by force (`_abandon`), held here until they end so that none is
garbage-collected mid-flight: a closed one ends at its next step, one that ignored being
closed too runs on, detached, until it ends of itself."""

_log = logging.getLogger(__name__)


async def bounded(
    awaitable: Awaitable[T], seconds: float, error: Exception, *, grace: float | None = None
) -> T:
    """`awaitable`'s result, or `error` once `seconds` pass, even when it swallows its
    cancellation: it runs as its own task, which past the deadline (or when the caller
    is cancelled) is cancelled and, if still running `grace` seconds later
    (`CANCEL_GRACE`), stopped by force (`_abandon`). Why not `asyncio.timeout` or
    `wait_for`: both wait for the cancelled call to end, forever if it never does."""
    grace = CANCEL_GRACE if grace is None else grace
    task = asyncio.ensure_future(_awaited(awaitable))
    try:
        await asyncio.wait({task}, timeout=seconds)
    except asyncio.CancelledError:  # the caller's own (Ctrl-C, an outer deadline)
        await _stop(task, grace, str(error))
        _close_unstarted(awaitable)
        raise
    if task.done():
        return task.result()
    if not await _stop(task, grace, str(error)):
        error.args = (f"{error}; it ignored cancellation for {grace:g} s and was stopped",)
    raise error


async def _awaited(awaitable: Awaitable[T]) -> T:
    """A coroutine of our own around any awaitable (a future too), so that it can be
    closed by force (`_abandon`)."""
    return await awaitable


def _close_unstarted(awaitable: Awaitable[Any]) -> None:
    """Close a coroutine whose task was cancelled before it ever ran (Python would warn
    that it was never awaited)."""
    if inspect.iscoroutine(awaitable) and inspect.getcoroutinestate(awaitable) == "CORO_CREATED":
        awaitable.close()


async def _stop(task: asyncio.Task[Any], grace: float, what: str) -> bool:
    """Cancel `task` and wait up to `grace` seconds for it to end, then stop it by force
    (`_abandon`); also when this wait is cancelled. True when it ended in time."""
    task.cancel()
    try:
        await asyncio.wait({task}, timeout=grace)
    finally:
        ended = task.done()
        if ended:
            _retrieve(task)
        else:
            _abandon(task, what)
    return ended


def _abandon(task: asyncio.Task[Any], what: str) -> None:
    """Stop a task that swallowed its cancellation: close its coroutine (`GeneratorExit`
    at its await, which `except CancelledError` or `except Exception` do not catch) and
    cancel it once more so that it ends; if it ignores that too, hold it in `ABANDONED`
    until it ends of itself. Either way nobody waits on it: a task still running at the
    run's end would otherwise also hold `asyncio.run` at exit."""
    _log.warning("%s: the call ignored its cancellation; stopped by force", what)
    try:
        task.get_coro().close()  # type: ignore[union-attr]
    except RuntimeError:  # it awaited again while being closed
        _log.warning("%s: the call ignored being closed too; left running detached", what)
    task.cancel()
    ABANDONED.add(task)
    task.add_done_callback(_forget)


def _forget(task: asyncio.Task[Any]) -> None:
    """An abandoned task ended: drop it from `ABANDONED`."""
    ABANDONED.discard(task)
    _retrieve(task)


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark the outcome of a task nobody will read as read (asyncio would log it)."""
    if not task.cancelled():
        task.exception()


class _Deadlined:
    """Delegates everything to the wrapped object (optional attributes included)."""

    def __init__(self, inner: Any, seconds: float) -> None:
        self._inner = inner
        self._seconds = seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _AdapterWithDeadline(_Deadlined):
    def __init__(self, inner: Any, seconds: float, episode: EpisodeDeadline | None) -> None:
        super().__init__(inner, seconds)
        self._episode = episode

    async def start(self, session: Any) -> None:
        await bounded(
            self._inner.start(session),
            self._seconds,
            AdapterTimeoutError(f"agent session start: no answer within {self._seconds:g} s"),
        )

    async def send(self, turn: Any) -> Any:
        return await bounded(
            self._inner.send(turn),
            self._seconds,
            AdapterTimeoutError(
                f"agent reply: not finished within {self._seconds:g} s (--turn-timeout)"
            ),
        )

    async def close(self) -> None:
        """Close within the turn deadline too, with the episode's deadline paused: the
        conversation is over by then (it is scored next), and a close that never returns
        must neither turn it into a timeout (the loop records a failed close as a
        warning) nor hold the run."""
        episode = self._episode
        paused = episode.paused() if episode is not None else contextlib.nullcontext()
        with paused:
            await bounded(
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
        return await bounded(
            awaitable,
            self._seconds,
            UserTimeoutError(
                f"user reply: not finished within {self._seconds:g} s (--turn-timeout)"
            ),
        )


def with_turn_deadline(adapter: T, seconds: float, episode: EpisodeDeadline | None = None) -> T:
    """`adapter` whose session start, every `send` and its close must finish within
    `seconds`; its close pauses `episode`'s deadline, when given."""
    return _AdapterWithDeadline(adapter, seconds, episode)  # type: ignore[return-value]


def user_with_deadline(user: T, seconds: float) -> T:
    """`user` whose every reply must come within `seconds`."""
    return _UserWithDeadline(user, seconds)  # type: ignore[return-value]


class EpisodeDeadline:
    """One episode's `--episode-timeout`, which the adapter's close does not count
    against (`paused`).

    Why: the close runs once the conversation is over, before it is scored; were it
    held to what is left of the episode, a slow close would turn a finished episode into
    the agent's timeout and lose its reward. The close has `--turn-timeout` of its own."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.warnings: list[str] = []  # a pause that outlived the time left (the record's)
        self._scope: asyncio.Timeout | None = None

    async def run(self, awaitable: Awaitable[T]) -> T:
        """`awaitable` (one episode), as `EpisodeTimeoutError` once `seconds` pass.

        The episode (our code) is cancelled and waited for: it ends soon after, since
        every adapter and user call in it is `bounded`, and it closes its adapter on the
        way out."""
        error = EpisodeTimeoutError(
            f"episode not finished within {self.seconds:g} s (--episode-timeout)"
        )
        try:
            async with asyncio.timeout(self.seconds) as scope:
                self._scope = scope
                try:
                    return await awaitable
                finally:
                    self._scope = None
        except TimeoutError:
            if scope.expired():
                raise error from None
            raise

    @contextlib.contextmanager
    def paused(self, what: str = "agent close") -> Iterator[None]:
        """The deadline stopped for the block and moved on by its duration after it: the
        episode keeps the time it had left when the block began. A block that outlived
        that time is noted in `warnings`. Nothing is paused once the deadline expired or
        the episode ended (a close on the way out of either)."""
        scope = self._scope
        when = scope.when() if scope is not None and not scope.expired() else None
        if scope is None or when is None:
            yield
            return
        loop = asyncio.get_running_loop()
        began = loop.time()
        left = when - began
        scope.reschedule(None)
        try:
            yield
        finally:
            took = loop.time() - began
            if took > left:
                self.warnings.append(
                    f"{what}: took {took:.1f} s, longer than the {max(left, 0):.1f} s left of "
                    f"the episode (--episode-timeout {self.seconds:g}); not counted against it"
                )
            if self._scope is scope and not scope.expired():
                scope.reschedule(loop.time() + left)


async def episode_deadline(awaitable: Awaitable[T], seconds: float) -> T:
    """`awaitable` (one episode), as an agent timeout once `seconds` pass
    (`EpisodeDeadline.run`, for an episode whose adapter's close needs no pause)."""
    return await EpisodeDeadline(seconds).run(awaitable)
