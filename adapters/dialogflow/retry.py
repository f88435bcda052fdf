"""Retries that are safe for a conversation, and a shared request-rate limit.

A DetectIntent changes the session: retrying one that may have reached the agent can
duplicate a user turn or a tool result. So:

* UNAVAILABLE and RESOURCE_EXHAUSTED (the request was refused, not run) are retried with
  exponential backoff and jitter, waiting what the server's `google.rpc.RetryInfo` asks
  for when it says (plus jitter, so concurrent episodes do not retry in lockstep); the
  default 10 attempts wait at least ~127 s in all, outlasting a per-minute quota window;
* DEADLINE_EXCEEDED and INTERNAL/UNKNOWN (may have run) are retried at most
  `ambiguous_retries` times (default once), and every such retry is recorded;
* an answer larger than the channel accepts (`max_response_mb`: the client's own
  RESOURCE_EXHAUSTED "Received message larger than max", or metadata over gRPC's
  limit) is final, an `AdapterProtocolError`: the request ran, and sending it again
  would repeat it;
* an answer gRPC cannot decode (grpc.aio returns None for it) is an
  `AdapterProtocolError`, not retried for the same reason;
* UNAUTHENTICATED / PERMISSION_DENIED become `AdapterAuthError`; everything else
  (INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION...) an `AdapterError` carrying the
  server's message, without retry.

The client library's own retry is disabled by the caller (`retry=None`) so the two never
stack; every attempt has an explicit timeout.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
from google.api_core import exceptions as gexc
from google.protobuf.message import DecodeError

from tau_adapters.protocol import AdapterAuthError, AdapterError, AdapterProtocolError

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[Any]]

REFUSED = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED})
AMBIGUOUS = frozenset(
    {grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}
)
AUTH = frozenset({grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED})


@dataclass
class RetryPolicy:
    max_attempts: int = 10
    initial: float = 1.0
    maximum: float = 32.0
    multiplier: float = 2.0
    jitter: float = 0.2
    ambiguous_retries: int = 1
    max_server_delay: float = 300.0

    def backoff(self, retry: int, rng: random.Random) -> float:
        """Delay before retry number `retry` (1-based) when the server gave none."""
        base = min(self.maximum, self.initial * self.multiplier ** (retry - 1))
        return base * (1 + self.jitter * (2 * rng.random() - 1))

    def server_backoff(self, server: float, rng: random.Random) -> float:
        """The server's RetryInfo delay (capped), plus up to `jitter` more: never earlier
        than asked, and concurrent episodes told the same delay do not retry in lockstep."""
        return min(server, self.max_server_delay) * (1 + self.jitter * rng.random())

    def budget(self) -> float:
        """Least total wait before a refused request is given up (the backoff's lower
        bound summed over every retry): with the defaults about 127 s, more than a
        per-minute quota window."""
        return sum(
            min(self.maximum, self.initial * self.multiplier ** (r - 1)) * (1 - self.jitter)
            for r in range(1, self.max_attempts)
        )


@dataclass
class RetryLog:
    """What happened on the way to one answer: kept in the trajectory."""

    attempts: int = 0
    retries: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ambiguous(self) -> int:
        return sum(1 for r in self.retries if r.get("ambiguous"))


def status_code(exc: BaseException) -> grpc.StatusCode | None:
    if isinstance(exc, gexc.GoogleAPICallError):
        code = exc.grpc_status_code
        return code if isinstance(code, grpc.StatusCode) else None
    if isinstance(exc, grpc.RpcError) and hasattr(exc, "code"):
        code = exc.code()
        return code if isinstance(code, grpc.StatusCode) else None
    return None


def rpc_error_behind(exc: Exception) -> grpc.RpcError | None:
    """The gRPC error behind `exc` when api_core failed to convert it: a status whose
    `grpc-status-details-bin` trailer is malformed makes api_core raise the parser's
    DecodeError (or ValueError) instead, with the RpcError as its context."""
    context = exc.__context__
    if isinstance(exc, DecodeError | ValueError) and isinstance(context, grpc.RpcError):
        return context
    return None


def server_message(exc: BaseException) -> str:
    if isinstance(exc, gexc.GoogleAPICallError):
        return str(exc.message or exc)
    if isinstance(exc, grpc.RpcError) and hasattr(exc, "details"):
        return str(exc.details() or exc)
    return str(exc)


def too_large(exc: BaseException) -> bool:
    """Whether the client refused an answer over its size limit, the message or its
    metadata (gRPC says RESOURCE_EXHAUSTED, but the request ran)."""
    message = server_message(exc)
    return status_code(exc) == grpc.StatusCode.RESOURCE_EXHAUSTED and (
        "larger than max" in message or "metadata size exceeds" in message
    )


def undecodable(result: object) -> bool:
    """Whether gRPC could not decode the answer: grpc.aio then returns None instead of
    raising (and a library pager wraps that None)."""
    return result is None or getattr(result, "_response", result) is None


def retry_delay(exc: BaseException) -> float | None:
    """The delay a `google.rpc.RetryInfo` detail asks for, if the error carries one."""
    details = getattr(exc, "details", None)
    if not isinstance(details, list | tuple):
        return None
    for detail in details:
        delay = getattr(detail, "retry_delay", None)
        if delay is not None and hasattr(delay, "seconds"):
            return float(delay.seconds) + float(delay.nanos) / 1e9
    return None


def to_adapter_error(exc: BaseException, what: str) -> AdapterError:
    """The typed error for a failed call (never retried further)."""
    code = status_code(exc)
    name = code.name if code is not None else type(exc).__name__
    message = f"dialogflow {what}: {name}: {server_message(exc)}"
    if too_large(exc):
        return AdapterProtocolError(
            f"{message} (the answer is over max_response_mb; the request was not retried)"
        )
    if code in AUTH:
        return AdapterAuthError(message)
    return AdapterError(message, retryable=code in REFUSED or code in AMBIGUOUS)


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    what: str = "call",
    log: RetryLog | None = None,
    sleep: Sleep = asyncio.sleep,
    before_attempt: Callable[[], Awaitable[Any]] | None = None,
    rng: random.Random | None = None,
) -> T:
    """`await call()` with the module's retry rules; AdapterError when it gives up."""
    log = log if log is not None else RetryLog()
    rng = rng or random.Random()
    refused = 0
    ambiguous = 0
    while True:
        if before_attempt is not None:
            await before_attempt()
        log.attempts += 1
        try:
            try:
                result = await call()
            except (DecodeError, ValueError) as unconverted:
                if (behind := rpc_error_behind(unconverted)) is None:
                    raise
                raise behind from None
        except (gexc.GoogleAPICallError, grpc.RpcError) as exc:
            code = status_code(exc)
            if too_large(exc):
                raise to_adapter_error(exc, what) from None
            if code is not None and code in REFUSED and log.attempts < policy.max_attempts:
                refused += 1
                server = retry_delay(exc)
                delay = (
                    policy.server_backoff(server, rng)
                    if server is not None
                    else policy.backoff(refused, rng)
                )
                log.retries.append(
                    {"code": code.name, "delay": delay, "server_delay": server is not None}
                )
                await sleep(delay)
                continue
            if code is not None and code in AMBIGUOUS and ambiguous < policy.ambiguous_retries:
                ambiguous += 1
                log.retries.append({"code": code.name, "delay": 0.0, "ambiguous": True})
                continue
            raise to_adapter_error(exc, what) from None
        if undecodable(result):
            raise AdapterProtocolError(
                f"dialogflow {what}: the answer is not a valid {what} response "
                "(undecodable protobuf); the request was not retried"
            )
        return result


class TokenBucket:
    """At most `rate` requests per second on average, bursts up to `burst`; shared by
    every adapter of a provider so concurrent episodes respect one project quota."""

    def __init__(
        self,
        rate: float,
        burst: float = 1.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self.burst = max(1.0, burst)
        self._tokens = self.burst
        self._clock = clock
        self._sleep = sleep
        self._stamp = clock()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now

    async def acquire(self) -> float:
        """Take one token, waiting for it; returns how long it waited (seconds)."""
        waited = 0.0
        async with self._lock:  # FIFO: waiters queue on the lock
            self._refill()
            while self._tokens < 1.0:
                delay = (1.0 - self._tokens) / self.rate
                await self._sleep(delay)
                waited += delay
                self._refill()
            self._tokens -= 1.0
        return waited
