"""Which model to call and how: `LLMConfig`, and the retry policy used when it names none."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tau_adapters.options import MAX_ATTEMPTS, MAX_RESPONSE_BYTES
from tau_adapters.protocol import AdapterConfigError
from tau_adapters.redaction import truncate
from tau_bench.llm.retry import RetryPolicy
from tau_bench.user_values import MAX_TIMEOUT, check_endpoint_url

DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""Bytes of one reply body, before and after decompression (16 MiB): far more than any
model writes in one answer, far less than what hurts a worker (`tau_bench.llm.wire`)."""

DEFAULT_TIMEOUT = 600.0
"""Seconds one model call may take, connection to last byte, when a config names none."""

DEFAULT_RETRY = RetryPolicy()
"""The policy used when a config names none, read at call time: replace it (tests do,
with `monkeypatch.setattr(tau_bench.llm.config, "DEFAULT_RETRY", ...)`) to change every call."""


@dataclass(frozen=True)
class LLMConfig:
    """Which model to call and how; built once per user/agent from CLI options.

    `provider` is litellm's `custom_llm_provider` (None when the model has a prefix such
    as `openai/gpt-4o`); `api_base` points at OpenAI-compatible servers (vLLM, gateways).
    `max_attempts` overrides the retry policy's; `retry` None means `DEFAULT_RETRY` at call
    time. `extra` goes to litellm as is (max_tokens, reasoning_effort, api_key...).
    `timeout` bounds each attempt as a whole (connect, headers, body); `max_response_bytes`
    bounds each reply body, compressed and decompressed.
    """

    model: str
    provider: str | None = None
    api_base: str | None = None
    temperature: float | None = 0.0
    seed: int | None = None
    timeout: float | None = DEFAULT_TIMEOUT
    max_attempts: int | None = None
    retry: RetryPolicy | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    top_p: float | None = None
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES

    @classmethod
    def from_options(
        cls,
        options: Mapping[str, Any],
        *,
        model_key: str = "model",
        provider_key: str = "provider",
        default_model: str | None = None,
    ) -> LLMConfig:
        """A config from a run-options dict (unknown keys are ignored).

        Values may be strings (`--agent-option max_attempts=8`). A value that is not a
        number where one is needed, or one out of its range (a negative temperature, a
        timeout that is no deadline, an `api_base` that is no http(s) URL), is an
        `AdapterConfigError` naming the option: every tool that builds a model-backed
        agent or user (`tau run`, the emulators, the reference bots) refuses it at start,
        in one line, not at its first call.
        """
        model = options.get(model_key) or default_model
        if not model:
            raise AdapterConfigError(f"no model given (option {model_key!r})")
        temperature = _ranged(options, "temperature", 0.0, low=0.0, low_allowed=True)
        attempts = whole_option(options, "max_attempts", None, low=1, high=MAX_ATTEMPTS)
        extra = options.get("llm_extra") or {}
        if not isinstance(extra, Mapping):
            raise AdapterConfigError("option 'llm_extra' must be a mapping of litellm arguments")
        api_base = options.get("api_base") or None
        try:
            check_endpoint_url(None if api_base is None else str(api_base))
        except ValueError as exc:
            raise AdapterConfigError(f"option 'api_base': {exc}") from None
        return cls(
            model=str(model),
            provider=options.get(provider_key) or None,
            api_base=api_base,
            temperature=temperature,
            seed=_number(options, "seed", int, None),
            timeout=_ranged(options, "timeout", DEFAULT_TIMEOUT, low=0.0, high=MAX_TIMEOUT),
            top_p=_ranged(options, "top_p", None, low=0.0, high=1.0),
            max_attempts=attempts,
            extra=dict(extra),
            max_response_bytes=_positive(options, "max_response_bytes"),
        )

    def policy(self) -> RetryPolicy:
        """The retry policy of this config's calls (the default one read now)."""
        return self.retry or DEFAULT_RETRY

    def attempts(self) -> int:
        """How many attempts a call makes at most."""
        return max(1, self.max_attempts or self.policy().max_attempts)

    def deadline(self) -> float:
        """Seconds one attempt may take in all (`timeout`, or `DEFAULT_TIMEOUT`)."""
        return DEFAULT_TIMEOUT if self.timeout is None else self.timeout


def whole_option(
    options: Mapping[str, Any], key: str, default: int | None, *, low: int, high: int | None = None
) -> int | None:
    """A count option (attempts, examples): a whole number from `low` to `high` (`2`,
    `"2"` or `2.0`; not `2.5`, `True` or `"two"`), `default` when absent or empty. Read
    with `or`, a 0 that asks for none would quietly be the default."""
    value = options.get(key)
    if value is None or value == "":
        return default
    wanted = f" from {low} to {high}" if high is not None else f", {low} or more"
    given = truncate(repr(value), 100)
    refused = AdapterConfigError(f"option {key!r} must be a whole number{wanted}, got {given}")
    if isinstance(value, bool):
        raise refused
    try:
        count = int(value)
    except (TypeError, ValueError, OverflowError):
        raise refused from None
    if isinstance(value, float) and value != count:
        raise refused
    if count < low or (high is not None and count > high):
        raise refused
    return count


def _number(options: Mapping[str, Any], key: str, kind: Callable[[Any], Any], default: Any) -> Any:
    value = options.get(key, default)
    if value is None:
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise AdapterConfigError(f"option {key!r} must be a number, got {value!r}") from None


def _ranged(
    options: Mapping[str, Any],
    key: str,
    default: float | None,
    *,
    low: float,
    high: float | None = None,
    low_allowed: bool = False,
) -> float | None:
    """A finite number above `low` (or equal to it, with `low_allowed`) and at most
    `high`; `default` when absent."""
    value = _number(options, key, float, default)
    if value is None:
        return None
    above = value >= low if low_allowed else value > low
    if not (math.isfinite(value) and above and (high is None or value <= high)):
        wanted = f"{'at least' if low_allowed else 'above'} {low:g}"
        if high is not None:
            wanted += f" and at most {high:g}"
        raise AdapterConfigError(f"option {key!r} must be a finite number {wanted}, got {value!r}")
    return float(value)


def _positive(options: Mapping[str, Any], key: str) -> int:
    """A byte limit option: a whole number from 1 to `MAX_RESPONSE_BYTES`
    (`DEFAULT_MAX_RESPONSE_BYTES` when absent)."""
    value = _number(options, key, int, DEFAULT_MAX_RESPONSE_BYTES)
    if value is None or not 1 <= value <= MAX_RESPONSE_BYTES:
        raise AdapterConfigError(
            f"option {key!r} must be a number of bytes from 1 to {MAX_RESPONSE_BYTES}"
        )
    return int(value)
