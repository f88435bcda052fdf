"""The typed errors of a model call: what failed and whether another attempt may help."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tau_adapters.protocol import AdapterAuthError, AdapterError

if TYPE_CHECKING:
    from tau_bench.llm.retry import RetryRecord


class LLMError(AdapterError):
    """A model call failed for good (not retryable, or retries exhausted)."""

    kind = "llm_error"

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        status: int | None = None,
        provider: str | None = None,
        model: str | None = None,
        attempts: int = 1,
        retries: Sequence[RetryRecord] = (),
    ) -> None:
        super().__init__(message, retryable=retryable)
        self.status = status
        self.provider = provider
        self.model = model
        self.attempts = attempts
        self.retries = list(retries)


class LLMAuthError(LLMError, AdapterAuthError):
    """The provider refused the credentials (401/403)."""

    kind = "auth_error"


class LLMBadRequestError(LLMError):
    """The provider rejected the request itself (400, 404, 422...): retrying cannot help."""

    kind = "bad_request"


class LLMContextWindowError(LLMBadRequestError):
    """The conversation no longer fits the model's context window."""

    kind = "context_window_exceeded"


class LLMRateLimitError(LLMError):
    """Still rate limited (429) after every attempt."""

    kind = "rate_limited"


class LLMUnavailableError(LLMError):
    """Timeouts, 5xx or connection errors on every attempt."""

    kind = "llm_unavailable"


class LLMMalformedReplyError(LLMError):
    """The model service answered something that is not a chat completion (no choices, a
    message that is not an object, tool calls that are not a list, a body that is not
    JSON or cannot be decoded). Not retried: the same request would get the same answer;
    like an adapter's protocol error, an agent's is its own failure."""

    kind = "malformed_reply"


class LLMReplyTooLargeError(LLMMalformedReplyError):
    """The reply body passed `LLMConfig.max_response_bytes`, before or after decompression."""

    kind = "reply_too_large"
