"""Retries that are safe for a conversation, with tenacity.

A RunSession changes the session: retrying one that may have reached the agent could
duplicate a user turn or a tool response. So:

* UNAVAILABLE and RESOURCE_EXHAUSTED (refused, not run) are retried up to
  `max_attempts`, waiting what the server's `google.rpc.RetryInfo` asks for when it says
  (capped), else exponential backoff with jitter;
* DEADLINE_EXCEEDED, INTERNAL and UNKNOWN (may have run) are retried at most
  `ambiguous_retries` times (0 or 1), and each such retry is recorded;
* UNAUTHENTICATED / PERMISSION_DENIED become `AdapterAuthError`, everything else an
  `AdapterError` with the server's message, not retried;
* an answer larger than the channel accepts (gRPC reports it as RESOURCE_EXHAUSTED
  "Received message larger than max") is final: `AdapterProtocolError`, not retried (the
  same answer would come again); so is an answer gRPC cannot decode (grpc.aio returns
  None for it).

Every call has a total deadline (all attempts and waits); each attempt gets
min(timeout, what is left). The client library's own retry is disabled by the callers
(`retry=None`) so the two never stack.
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
from tenacity import AsyncRetrying, RetryCallState

from tau_adapters.protocol import AdapterAuthError, AdapterError, AdapterProtocolError

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[Any]]

REFUSED = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED})
AMBIGUOUS = frozenset(
    {grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}
)
AUTH = frozenset({grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED})
TRANSPORT_ERRORS = (gexc.GoogleAPICallError, grpc.RpcError, TimeoutError)


@dataclass
class RetryPolicy:
    max_attempts: int = 6
    initial: float = 1.0
    maximum: float = 32.0
    multiplier: float = 2.0
    jitter: float = 0.2
    ambiguous_retries: int = 1
    max_server_delay: float = 120.0
    timeout: float = 60.0
    deadline: float = 300.0

    def backoff(self, retry: int, rng: random.Random) -> float:
        """Delay before retry number `retry` (1-based) when the server named none."""
        base = min(self.maximum, self.initial * self.multiplier ** (retry - 1))
        return max(0.0, base * (1 + self.jitter * (2 * rng.random() - 1)))


@dataclass
class RetryLog:
    """What it took to get one answer; kept in the trajectory."""

    attempts: int = 0
    retries: list[dict[str, Any]] = field(default_factory=list)


def status_code(exc: BaseException) -> grpc.StatusCode | None:
    if isinstance(exc, gexc.GoogleAPICallError):
        code = exc.grpc_status_code
        return code if isinstance(code, grpc.StatusCode) else None
    if isinstance(exc, grpc.RpcError) and hasattr(exc, "code"):
        code = exc.code()
        return code if isinstance(code, grpc.StatusCode) else None
    if isinstance(exc, TimeoutError):
        return grpc.StatusCode.DEADLINE_EXCEEDED
    return None


def too_large(exc: BaseException) -> bool:
    """Whether the call failed because an answer exceeded the channel's size bound, the
    message or its metadata (gRPC says RESOURCE_EXHAUSTED, but the request ran)."""
    message = server_message(exc)
    return status_code(exc) == grpc.StatusCode.RESOURCE_EXHAUSTED and (
        "larger than max" in message or "metadata size exceeds" in message
    )


def undecodable(result: object) -> bool:
    """Whether gRPC could not decode the answer: grpc.aio then returns None instead of
    raising (and a library pager wraps that None)."""
    return result is None or getattr(result, "_response", result) is None


def undecodable_error(what: str) -> AdapterProtocolError:
    return AdapterProtocolError(
        f"ces {what}: the answer is not a valid {what} response (undecodable protobuf)"
    )


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
    if isinstance(exc, TimeoutError):
        return "no answer within the attempt's timeout"
    return str(exc)


def _delay_of(detail: Any) -> float | None:
    delay = getattr(detail, "retry_delay", None)
    if delay is not None and hasattr(delay, "seconds"):
        return float(delay.seconds) + float(delay.nanos) / 1e9
    return None


def retry_delay(exc: BaseException) -> float | None:
    """The delay a `google.rpc.RetryInfo` in the error's status details asks for."""
    details = getattr(exc, "details", None)
    if isinstance(details, list | tuple):
        for detail in details:
            if (found := _delay_of(detail)) is not None:
                return found
    if isinstance(exc, grpc.RpcError) and hasattr(exc, "trailing_metadata"):
        from google.rpc import error_details_pb2, status_pb2

        for key, value in exc.trailing_metadata() or ():
            if key != "grpc-status-details-bin":
                continue
            try:
                status = status_pb2.Status.FromString(value)
            except DecodeError:
                return None  # a malformed trailer: no delay asked for
            for any_detail in status.details:
                info = error_details_pb2.RetryInfo()
                if any_detail.Unpack(info):
                    return _delay_of(info)
    return None


def to_adapter_error(exc: BaseException, what: str, note: str = "") -> AdapterError:
    """The typed error for a call that failed for good."""
    code = status_code(exc)
    name = code.name if code is not None else type(exc).__name__
    message = f"ces {what}: {name}: {server_message(exc)}{note}"
    if too_large(exc):
        return AdapterProtocolError(
            f"ces {what}: the answer is larger than the client accepts "
            f"(max_response_bytes): {server_message(exc)}"
        )
    if code in AUTH:
        return AdapterAuthError(message)
    return AdapterError(message, retryable=code in REFUSED or code in AMBIGUOUS)


async def call_with_retries(
    call: Callable[[float], Awaitable[T]],
    policy: RetryPolicy,
    *,
    what: str,
    log: RetryLog | None = None,
    sleep: Sleep = asyncio.sleep,
    rng: random.Random | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """`await call(attempt_timeout)` under the module's rules; AdapterError on giving up."""
    log = log if log is not None else RetryLog()
    rng = rng or random.Random()
    started = clock()
    counts = {"refused": 0, "ambiguous": 0}

    def remaining() -> float:
        return policy.deadline - (clock() - started)

    def retryable(state: RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        code = status_code(exc) if exc is not None else None
        if exc is not None and too_large(exc):
            return False
        if code in REFUSED:
            return state.attempt_number < policy.max_attempts
        if code in AMBIGUOUS:
            return counts["ambiguous"] < policy.ambiguous_retries
        return False

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if exc is None or status_code(exc) not in REFUSED:
            return 0.0
        server = retry_delay(exc)
        if server is not None:
            return min(server, policy.max_server_delay)
        return policy.backoff(counts["refused"] + 1, rng)

    def stop(state: RetryCallState) -> bool:
        # Give up when the next attempt could not start before the deadline.
        return (state.upcoming_sleep or 0.0) >= remaining()

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        code = status_code(exc) if exc is not None else None
        entry: dict[str, Any] = {"code": code.name if code else "?", "delay": state.upcoming_sleep}
        if code in REFUSED:
            counts["refused"] += 1
            entry["server_delay"] = exc is not None and retry_delay(exc) is not None
        else:
            counts["ambiguous"] += 1
            entry["ambiguous"] = True
        log.retries.append(entry)

    async def attempt() -> T:
        log.attempts += 1
        budget = max(0.001, min(policy.timeout, remaining()))
        try:
            async with asyncio.timeout(budget + 1.0):  # the transport's own timeout is `budget`
                result = await call(budget)
        except (DecodeError, ValueError) as unconverted:
            if (behind := rpc_error_behind(unconverted)) is None:
                raise
            raise behind from None
        if undecodable(result):
            raise undecodable_error(what)  # final: the request ran
        return result

    retrying = AsyncRetrying(
        retry=retryable,
        wait=wait,
        stop=stop,
        sleep=sleep,
        before_sleep=before_sleep,
        reraise=True,
    )
    try:
        return await retrying(attempt)
    except TRANSPORT_ERRORS as exc:
        note = f" (after {log.attempts} attempts)" if log.attempts > 1 else ""
        raise to_adapter_error(exc, what, note) from None
