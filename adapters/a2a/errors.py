"""Map a2a-sdk / httpx failures to the SDK's typed adapter errors, secrets removed."""

from __future__ import annotations

from collections.abc import Iterable

import httpx
from a2a.client.errors import A2AClientError, A2AClientTimeoutError, AgentCardResolutionError
from a2a.utils.errors import A2AError
from google.protobuf.json_format import ParseError

from tau_adapters.bounded_http import BodyTooLarge
from tau_adapters.jsonsafe import printable
from tau_adapters.protocol import (
    AdapterAuthError,
    AdapterConfigError,
    AdapterError,
    AdapterProtocolError,
)
from tau_adapters.redaction import Redactor
from tau_adapters.retry_after import parse_retry_after

PREFIX = "a2a"


class A2ATaskError(AdapterError):
    """The agent ended its task in `failed` (an agent-side error)."""

    kind = "agent_task_failed"


class A2ATaskCanceled(A2ATaskError):
    kind = "agent_task_canceled"


class A2ATaskRejected(A2ATaskError):
    kind = "agent_task_rejected"


class Retryable(AdapterError):
    """A refusal that happened before the agent saw the request: safe to send again."""

    def __init__(self, message: str, delay: float | None = None) -> None:
        super().__init__(message, retryable=True)
        self.delay = delay


class ResponseTooLarge(BodyTooLarge):
    """The agent sent more than `max_response_bytes` in one answer (or too many events)."""


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with the secrets masked (`***`) and control characters escaped."""
    return printable(Redactor([s for s in secrets if s]).text(text))


def retry_after(response: httpx.Response) -> float | None:
    """Seconds from a response's Retry-After header, if it has a readable one."""
    return parse_retry_after(response.headers.get("retry-after"))


def _status_error(exc: BaseException) -> httpx.HTTPStatusError | None:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, httpx.HTTPStatusError):
            return seen
        seen = seen.__cause__
    return None


def _cause(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__
    return False


def map_error(exc: BaseException, what: str, secrets: Iterable[str | None] = ()) -> AdapterError:
    """One typed, one-line, secret-free error for a failed call `what`."""
    secrets = list(secrets)

    def line(text: str) -> str:
        return redact(f"{PREFIX}: {what}: {text}".replace("\n", " "), secrets)

    if isinstance(exc, AdapterError):
        return exc
    status = _status_error(exc)
    if status is not None:
        code = status.response.status_code
        reason = status.response.reason_phrase
        if code in (401, 403):
            return AdapterAuthError(line(f"HTTP {code} {reason}: check the token / API key"))
        if code in (429, 503):
            return Retryable(line(f"HTTP {code} {reason}"), retry_after(status.response))
        if code == 404 and isinstance(exc, AgentCardResolutionError):
            return AdapterConfigError(line(f"HTTP 404: no agent card at {status.request.url}"))
        return AdapterError(line(f"HTTP {code} {reason}"), retryable=code >= 500)
    if isinstance(exc, A2AClientTimeoutError) or _cause(exc, httpx.TimeoutException):
        if _cause(exc, httpx.ConnectTimeout):
            return Retryable(line("connect timed out"))
        return AdapterError(line("timed out"), retryable=True)
    if _cause(exc, httpx.ConnectError):
        return Retryable(line(f"cannot connect ({exc.__cause__ or exc})"))
    if _cause(exc, httpx.RequestError):
        return AdapterError(line(f"network error ({exc})"), retryable=True)
    if isinstance(exc, TimeoutError):
        return AdapterError(line("deadline exceeded"), retryable=True)
    if isinstance(exc, ParseError | ValueError | KeyError | TypeError) or _cause(exc, ParseError):
        return AdapterProtocolError(line(f"unreadable answer ({type(exc).__name__}: {exc})"))
    if isinstance(exc, AgentCardResolutionError):
        return AdapterProtocolError(line(str(exc)))
    if isinstance(exc, A2AClientError):
        return AdapterProtocolError(line(str(exc)))
    if isinstance(exc, A2AError):
        return AdapterError(line(f"agent returned {type(exc).__name__}: {exc}"))
    return AdapterError(line(f"{type(exc).__name__}: {exc}"))
