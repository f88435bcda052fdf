"""The LLM layer's one retry engine: which failures are retried, how long to wait, and
the record of every retry made (it lands in the trajectory).

Transient failures (429, timeouts, 5xx, connection errors) are retried with exponential
backoff and jitter, honouring `Retry-After` up to a cap; everything else fails at once.
The adapters have their own engine per transport kind under the same names
(`adapters/dialogflow/retry.py`, `adapters/http/transport.py`).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How model calls retry. Tests use zero waits; `sleep` is injectable for the same reason."""

    max_attempts: int = 5
    initial_wait: float = 1.0
    max_wait: float = 60.0
    jitter: float = 1.0
    max_retry_after: float = 120.0
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep)

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based), jitter included."""
        base = min(self.max_wait, self.initial_wait * (2 ** max(0, attempt - 1)))
        return base + (random.uniform(0, self.jitter) if self.jitter > 0 else 0.0)


@dataclass
class RetryRecord:
    """One failed attempt that was retried: what failed and how long we waited."""

    attempt: int
    kind: str
    status: int | None
    message: str
    wait: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "kind": self.kind,
            "status": self.status,
            "message": self.message,
            "wait": self.wait,
        }


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    attempts: int,
    retryable: Callable[[BaseException], bool],
    asked_wait: Callable[[BaseException], float | None],
    on_retry: Callable[[int, BaseException, float], None],
) -> T:
    """`await call()` up to `attempts` times while it raises `retryable` exceptions.

    The wait is what the server asked (`asked_wait`, capped by the policy) or the
    policy's backoff; `on_retry(attempt, exc, wait)` hears of each retry before its wait.
    The last exception is re-raised as is; a `BaseException` that is not an `Exception`
    (a cancellation) is never retried, whatever `retryable` says.

    The first attempt runs before tenacity is set up: most calls succeed at once, and
    tenacity's per-call set-up would cost every one of them (~0.1 ms of CPU). A failure
    worth retrying is handed to tenacity as its own first attempt, so the numbering,
    waits and records are tenacity's.
    """

    def retry_it(exc: BaseException) -> bool:
        return isinstance(exc, Exception) and retryable(exc)

    try:
        return await call()
    except Exception as exc:
        if attempts <= 1 or not retry_it(exc):
            raise
        first: BaseException | None = exc

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        asked = asked_wait(exc) if exc is not None else None
        if asked is not None:
            return min(asked, policy.max_retry_after)
        return policy.backoff(state.attempt_number)

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        if exc is not None:
            delay = state.next_action.sleep if state.next_action else 0.0
            on_retry(state.attempt_number, exc, delay)

    retrying = AsyncRetrying(
        stop=stop_after_attempt(max(1, attempts)),
        wait=wait,
        retry=retry_if_exception(retry_it),
        before_sleep=before_sleep,
        sleep=policy.sleep,
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            if first is not None:
                failed, first = first, None
                raise failed
            return await call()
    raise AssertionError("unreachable: tenacity either returns or re-raises")
