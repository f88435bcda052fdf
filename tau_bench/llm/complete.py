"""`complete`: one async model call through litellm, for every local LLM user and agent.

Why one function: retries, cost, token usage, seeds, provider concurrency caps and error
typing must behave the same whoever calls the model. OpenAI-format calls go through
litellm's own HTTP handler, pooled clients are handed to litellm, the cost litellm already
computed is reused, and a missing API key fails before any request. OpenAI-compatible
calls take the direct path (`tau_bench.llm.direct`) where it sends exactly the same.

On both paths each attempt is bounded as a whole by the config's `timeout` (a server
that drips its answer a byte at a time fails like a silent one), each reply body by its
`max_response_bytes` (`tau_bench.llm.wire`), and a reply that is not a chat completion
is one `LLMMalformedReplyError`, never a Python exception from deep inside the parsing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from tau_adapters.protocol import Usage
from tau_adapters.redaction import redact_text
from tau_bench.llm import direct
from tau_bench.llm.classify import classify, missing_key, provider_of, retry_after, status_of
from tau_bench.llm.clients import client_pool, openai_account_headers
from tau_bench.llm.config import LLMConfig
from tau_bench.llm.direct import use_direct
from tau_bench.llm.errors import (
    LLMAuthError,
    LLMBadRequestError,
    LLMError,
    LLMMalformedReplyError,
    LLMUnavailableError,
)
from tau_bench.llm.limits import semaphore
from tau_bench.llm.response import (
    Completion,
    clean_usage_dict,
    message_dict,
    raw_json,
    token_count,
    usage_of,
)
from tau_bench.llm.retry import RetryRecord, call_with_retries
from tau_bench.llm.runtime import litellm
from tau_bench.llm.wire import call_limit

MESSAGE_LIMIT = 500
"""Characters of a provider's error text kept in an error or retry record."""


def error_message(exc: BaseException, config: LLMConfig) -> str:
    """The provider's error text on one line, secrets masked, cut to `MESSAGE_LIMIT`."""
    text = str(exc) or type(exc).__name__
    text = text.split("Traceback (most recent call last)", 1)[0]  # litellm appends one
    reason = direct.connection_reason(exc)
    if reason:
        text = f"{text} ({reason})"
    secret = config.extra.get("api_key") if config.extra else None
    text = redact_text(text, [secret if isinstance(secret, str) else None])
    text = " ".join(text.split())
    return text[:MESSAGE_LIMIT] + ("…" if len(text) > MESSAGE_LIMIT else "")


def _arguments(
    config: LLMConfig,
    provider: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    overrides: Mapping[str, Any],
) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "model": config.model,
        "messages": [dict(m) for m in messages],
        "drop_params": True,
        "max_retries": 0,  # retries are ours, not the provider SDK's
    }
    if tools:
        kwargs["tools"] = [dict(t) for t in tools]
    optional = {
        "custom_llm_provider": config.provider,
        "api_base": config.api_base,
        "temperature": config.temperature,
        "seed": config.seed,
        "timeout": config.timeout,
        "top_p": config.top_p,
    }
    kwargs.update({k: v for k, v in optional.items() if v is not None and v != ""})
    kwargs.update(config.extra)
    kwargs.update(overrides)
    if provider == "openai":  # as the direct path's client sends them; a caller's win
        account = openai_account_headers()
        if account:
            kwargs["extra_headers"] = {**account, **dict(kwargs.get("extra_headers") or {})}
    return kwargs


async def complete(
    config: LLMConfig,
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    **overrides: Any,
) -> Completion:
    """Call the model once (retrying transient failures) and return its message.

    Raises an `LLMError` subclass (an `AdapterError` with `retryable` set) when the call
    fails for good; its message carries the provider's text, never the API key.
    """
    module = litellm()
    provider = provider_of(config)
    on_direct = use_direct(config, overrides)
    refused = direct.refusal(config) if on_direct else None
    if refused:
        raise LLMBadRequestError(refused, provider=provider, model=config.model, attempts=0)
    missing = missing_key(config, provider)
    if missing:
        raise LLMAuthError(
            f"{config.model} ({provider}): no API key: set {' or '.join(missing)}"
            " (or pass api_key in llm_extra)",
            provider=provider,
            model=config.model,
            attempts=0,
        )
    if on_direct:
        return await _complete_direct(config, provider, messages, tools, overrides)
    kwargs = _arguments(config, provider, messages, tools, overrides)
    # A caller's own client or TLS setting wins over the shared clients.
    pool = (
        None
        if "client" in kwargs or "ssl_verify" in kwargs
        else client_pool(provider, config.api_base, config.timeout, config.max_response_bytes)
    )

    async def send() -> Any:
        # The bound of the replies litellm's own shared clients read for this call
        # (`wire.bound_litellm_clients`): they serve calls of any limit.
        with call_limit(config.max_response_bytes):
            if pool is None:
                return _with_choices(await module.acompletion(**kwargs))
            slot, client = pool.acquire()
            try:
                return _with_choices(await module.acompletion(**kwargs, client=client))
            finally:
                pool.release(slot)

    response, retries, latency = await _with_retries(config, provider, send, classify)
    return Completion(
        message=message_dict(response),
        usage=usage_of(module, response),
        retries=retries,
        raw=raw_json(response),
        model=config.model,
        latency=latency,
    )


async def _complete_direct(
    config: LLMConfig,
    provider: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    overrides: Mapping[str, Any],
) -> Completion:
    """The direct path (`tau_bench.llm.direct`): same retries, errors and record."""

    async def send() -> Any:
        return await direct.send(config, messages, tools, overrides)

    data, retries, latency = await _with_retries(config, provider, send, direct.classify_direct)
    usage = clean_usage_dict(data.get("usage") or {})
    model = direct.request_model(config)
    return Completion(
        message=direct.message_of(data),
        usage=Usage(
            prompt_tokens=token_count(usage.get("prompt_tokens") or 0),
            completion_tokens=token_count(usage.get("completion_tokens") or 0),
            cost=direct.cost_of(model, usage),
            calls=1,
        ),
        retries=retries,
        raw=data,
        model=config.model,
        latency=latency,
    )


def _with_choices(response: Any) -> Any:
    """litellm's response, if it has a choice to read (litellm passes an empty list on)."""
    if not getattr(response, "choices", None):
        raise LLMMalformedReplyError("malformed reply: it has no choices")
    return response


async def _attempt(config: LLMConfig, send: Callable[[], Awaitable[Any]]) -> Any:
    """One attempt, finished within the config's `deadline()` (connect, headers and the
    whole body: the HTTP clients' own timeouts only bound each read); a reply refused
    below the SDK that sent it (too large, malformed) as its own `LLMError`."""
    limit = config.deadline()
    try:
        async with asyncio.timeout(limit) as deadline:
            return await send()
    except TimeoutError:
        if not deadline.expired():
            raise
        raise LLMUnavailableError(
            f"no complete answer within {limit:g} s (timeout)", retryable=True
        ) from None
    except Exception as exc:
        from tau_bench.llm.wire import reply_error

        own = reply_error(exc)
        if own is None or own is exc:
            raise
        raise own from None


async def _with_retries(
    config: LLMConfig,
    provider: str,
    send: Callable[[], Awaitable[Any]],
    classifier: Callable[[BaseException], tuple[type[LLMError], bool]],
) -> tuple[Any, list[RetryRecord], float]:
    """`send()` under the provider cap and the retry policy: (response, the retries
    made, the last attempt's latency); a final failure as its typed `LLMError`."""
    retries: list[RetryRecord] = []
    started = time.perf_counter()

    async def call() -> Any:
        nonlocal started
        started = time.perf_counter()
        cap = semaphore(provider)
        if cap is None:
            return await _attempt(config, send)
        async with cap:
            return await _attempt(config, send)

    def record(attempt: int, exc: BaseException, wait: float) -> None:
        kind = classifier(exc)[0].kind
        message = error_message(exc, config)
        retries.append(RetryRecord(attempt, kind, status_of(exc), message, wait))

    try:
        response = await call_with_retries(
            call,
            config.policy(),
            attempts=config.attempts(),
            retryable=lambda exc: classifier(exc)[1],
            asked_wait=retry_after,
            on_retry=record,
        )
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        error_type, retryable = classifier(exc)
        tried = len(retries) + 1
        suffix = f" after {tried} attempts" if tried > 1 else ""
        raise error_type(
            f"{config.model} ({provider}){suffix}: {error_message(exc, config)}",
            retryable=retryable,
            status=status_of(exc),
            provider=provider,
            model=config.model,
            attempts=tried,
            retries=retries,
        ) from None
    return response, retries, time.perf_counter() - started
