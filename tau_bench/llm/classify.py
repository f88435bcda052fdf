"""What a failed call means: its error type, whether to retry, how long the server asked
us to wait, and whether a key is missing before any request is made."""

from __future__ import annotations

import asyncio
import functools
import math
import os
import re

from tau_adapters.retry_after import parse_retry_after
from tau_bench.llm.config import LLMConfig
from tau_bench.llm.errors import (
    LLMAuthError,
    LLMBadRequestError,
    LLMContextWindowError,
    LLMError,
    LLMMalformedReplyError,
    LLMRateLimitError,
    LLMUnavailableError,
)
from tau_bench.llm.runtime import litellm

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})

KEY_PROVIDERS = frozenset(
    {"openai", "anthropic", "gemini", "mistral", "groq", "deepseek", "xai", "openrouter"}
)
"""Providers whose only credential is an API key (others may use cloud credentials)."""

_MISSING_CREDENTIALS = re.compile(
    r"(?i)missing credentials|missing [\w ]{0,30}api[ _-]?key|api_key client option must be set"
    r"|no (?:api )?key (?:is )?(?:set|provided|found)"
)

# Google credentials refused or absent (token exchange, ADC, AI Studio keys): litellm
# wraps them as connection errors or 400s, but no retry can fix them.
_GOOGLE_AUTH = re.compile(
    r"invalid_grant|RefreshError|Failed to load vertex credentials|DefaultCredentialsError"
    r"|Could not automatically determine credentials|API key not valid|API_KEY_INVALID"
)

# litellm's words for a reply it could not turn into a response (a malformed one, on the
# routes whose replies `tau_bench.llm.wire` does not check first): not a connection error.
_INVALID_RESPONSE = "Invalid response object"


def provider_of(config: LLMConfig) -> str:
    """The provider name a model call goes to (the key of the concurrency caps)."""
    return config.provider or _provider(config.model, config.api_base)


@functools.lru_cache(maxsize=256)
def _provider(model: str, api_base: str | None) -> str:
    try:
        _, provider, _, _ = litellm().get_llm_provider(model=model, api_base=api_base)
        return str(provider)
    except Exception:
        return model.split("/", 1)[0] if "/" in model else "openai"


def missing_key(config: LLMConfig, provider: str) -> list[str]:
    """The environment variables one of which should hold the provider's API key, when
    no key is set anywhere; empty when a key is present, or may not be needed (a custom
    `api_base`, a provider with other kinds of credentials)."""
    if provider not in KEY_PROVIDERS or config.api_base or config.extra.get("api_key"):
        return []
    module = litellm()
    if getattr(module, "api_key", None) or getattr(module, f"{provider}_key", None):
        return []
    if provider == "openai" and (
        getattr(module, "api_base", None)
        or os.environ.get("OPENAI_BASE_URL")
        or os.environ.get("OPENAI_API_BASE")
    ):
        return []  # an OpenAI-compatible server named by the environment
    model = config.model
    if config.provider and not model.startswith(f"{config.provider}/"):
        model = f"{config.provider}/{model}"
    try:
        found = module.validate_environment(model=model)
    except Exception:
        return []
    if found.get("keys_in_environment"):
        return []
    return [str(name) for name in found.get("missing_keys") or []]


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an exception carries, if any."""
    status = getattr(exc, "status_code", None)
    try:
        return int(status) if status is not None else None
    except (TypeError, ValueError):
        return None


def classify(exc: BaseException) -> tuple[type[LLMError], bool]:
    """The error type an exception maps to, and whether another attempt may succeed."""
    if isinstance(exc, LLMError):  # ours (a malformed reply, the call's deadline)
        return type(exc), exc.retryable
    module = litellm()
    if _MISSING_CREDENTIALS.search(str(exc)) or _GOOGLE_AUTH.search(str(exc)):
        return LLMAuthError, False  # credentials missing or refused: never retry
    if isinstance(exc, module.ContextWindowExceededError):
        return LLMContextWindowError, False
    if isinstance(exc, module.AuthenticationError | module.PermissionDeniedError):
        return LLMAuthError, False
    if isinstance(exc, module.RateLimitError):
        return LLMRateLimitError, True
    if _INVALID_RESPONSE in str(exc):
        return LLMMalformedReplyError, False
    if isinstance(exc, module.Timeout | module.APIConnectionError | asyncio.TimeoutError):
        return LLMUnavailableError, True
    status = status_of(exc)
    if status in (401, 403):
        return LLMAuthError, False
    if status == 429:
        return LLMRateLimitError, True
    if status is not None and (status in RETRYABLE_STATUS or status >= 500):
        return LLMUnavailableError, True
    if status is not None and 400 <= status < 500:
        return LLMBadRequestError, False
    if isinstance(exc, module.BadRequestError):
        return LLMBadRequestError, False
    return LLMError, False


def _headers_of(exc: BaseException) -> dict[str, str]:
    out: dict[str, str] = {}
    for source in (
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "litellm_response_headers", None),
        getattr(exc, "headers", None),
    ):
        if source is None:
            continue
        try:
            for key, value in dict(source).items():
                out[str(key).lower()] = str(value)
        except Exception:
            continue
    return out


def retry_after(exc: BaseException) -> float | None:
    """Seconds the provider asked us to wait (`retry-after-ms` / `retry-after`), if any."""
    headers = _headers_of(exc)
    if "retry-after-ms" in headers:
        try:
            ms = float(headers["retry-after-ms"])
        except ValueError:
            pass
        else:
            if math.isfinite(ms):
                return max(0.0, ms / 1000.0)
    return parse_retry_after(headers.get("retry-after"))
