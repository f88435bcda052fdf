"""One async completion call for every local LLM user and agent, through litellm.

Why one function: retries, cost, token usage, seeds, provider concurrency caps and
error typing must behave the same whoever calls the model. `complete` retries (tenacity)
rate limits (429), timeouts, 5xx and connection errors with exponential backoff and
jitter (honouring `Retry-After`), never retries bad requests, context-window or auth errors,
and returns every retry it made next to the response so callers can record them.

litellm is imported lazily (it takes seconds) and never fetches its price map: the
local copy is forced before the import. We use litellm's httpx transport rather than
its aiohttp one, so one transport serves production and the respx-mocked tests.

Throughput (docs/performance.md, "Runner"): every call costs CPU in litellm, so the
per-call work that can legitimately be skipped is. OpenAI-format calls go through
litellm's own HTTP handler instead of the openai SDK (which re-walks every message and
tool schema against its TypedDicts on each call); OpenAI, Anthropic and Gemini calls
share per-event-loop httpx clients sized to the load (`_ClientPool`); the cost litellm
already computed for its logging is reused; a missing API key fails before any request.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import os
import random
import re
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from tau_adapters.protocol import AdapterAuthError, AdapterConfigError, AdapterError, Usage

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# litellm's own HTTP handler for OpenAI chat calls (the same request/response transforms
# as its openai-SDK route, without the SDK's per-call TypedDict walk of the whole body).
# Set it to False in the environment to go back to the SDK route.
OPENAI_HANDLER_ENV = "EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER"
os.environ.setdefault(OPENAI_HANDLER_ENV, "True")

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})


# ---------------------------------------------------------------------------- errors


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


# ---------------------------------------------------------------------------- secrets

_SECRET_PATTERNS = (
    re.compile(r"sk-[A-Za-z0-9_\-]{6,}"),
    re.compile(r"AIza[0-9A-Za-z_\-]{10,}"),
    re.compile(r"ya29\.[0-9A-Za-z_\-.]+"),
    re.compile(r"(?i)(bearer\s+)[^\s'\",]+"),
    re.compile(r"(?i)([?&](?:key|api_key|access_token)=)[^&\s'\"]+"),
    re.compile(r"(?i)((?:x-api-key|x-goog-api-key|api[_-]?key)[\"']?\s*[:=]\s*[\"']?)[^\s'\",}]+"),
)
_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)$", re.IGNORECASE)


def redact(text: str, secrets: Sequence[str | None] = ()) -> str:
    """`text` with API keys and tokens replaced by `***` (known values and common shapes)."""
    values = [s for s in secrets if s and len(s) >= 6]
    values += [v for k, v in os.environ.items() if _SECRET_ENV.search(k) and v and len(v) >= 6]
    for value in sorted(set(values), key=len, reverse=True):
        text = text.replace(value, "***")
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "***", text)
    return text


# ---------------------------------------------------------------------------- config


@dataclass(frozen=True)
class RetryPolicy:
    """How `complete` retries. Tests use zero waits; `sleep` is injectable for the same reason."""

    max_attempts: int = 5
    initial_wait: float = 1.0
    max_wait: float = 60.0
    jitter: float = 1.0
    max_retry_after: float = 120.0
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based), jitter included."""
        base = min(self.max_wait, self.initial_wait * (2 ** max(0, attempt - 1)))
        return base + (random.uniform(0, self.jitter) if self.jitter > 0 else 0.0)


DEFAULT_RETRY = RetryPolicy()
"""The policy used when a config names none; replace it (tests do) to change every call."""


@dataclass(frozen=True)
class LLMConfig:
    """Which model to call and how; built once per user/agent from CLI options.

    `provider` is litellm's `custom_llm_provider` (None when the model has a prefix such
    as `openai/gpt-4o`); `api_base` points at OpenAI-compatible servers (vLLM, gateways).
    `max_attempts` overrides the retry policy's; `retry` None means `DEFAULT_RETRY` at call
    time. `extra` goes to litellm as is (max_tokens, reasoning_effort, api_key...).
    """

    model: str
    provider: str | None = None
    api_base: str | None = None
    temperature: float | None = 0.0
    seed: int | None = None
    timeout: float | None = 600.0
    max_attempts: int | None = None
    retry: RetryPolicy | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    top_p: float | None = None

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

        Values may be strings (`--agent-option max_attempts=8`); a value that is not a
        number where one is needed is an `AdapterConfigError` naming the option.
        """
        model = options.get(model_key) or default_model
        if not model:
            raise AdapterConfigError(f"no model given (option {model_key!r})")
        temperature = _number(options, "temperature", float, 0.0)
        attempts = _number(options, "max_attempts", int, None)
        extra = options.get("llm_extra") or {}
        if not isinstance(extra, Mapping):
            raise AdapterConfigError("option 'llm_extra' must be a mapping of litellm arguments")
        return cls(
            model=str(model),
            provider=options.get(provider_key) or None,
            api_base=options.get("api_base") or None,
            temperature=temperature,
            seed=_number(options, "seed", int, None),
            timeout=_number(options, "timeout", float, 600.0),
            top_p=_number(options, "top_p", float, None),
            max_attempts=None if attempts is None else max(1, attempts),
            extra=dict(extra),
        )


def _number(options: Mapping[str, Any], key: str, kind: Callable[[Any], Any], default: Any) -> Any:
    value = options.get(key, default)
    if value is None:
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise AdapterConfigError(f"option {key!r} must be a number, got {value!r}") from None


# ---------------------------------------------------------------------------- results


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


@dataclass
class Completion:
    """The assistant message (OpenAI format), its usage and cost, and the retries it took."""

    message: dict[str, Any]
    usage: Usage
    retries: list[RetryRecord] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    model: str = ""
    latency: float = 0.0

    @property
    def content(self) -> str:
        return str(self.message.get("content") or "")

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list(self.message.get("tool_calls") or [])

    def extra(self) -> dict[str, Any]:
        """What a turn's `extra` should carry about this call (only the retries, if any)."""
        return {"retries": [r.to_dict() for r in self.retries]} if self.retries else {}


# ---------------------------------------------------------------------------- concurrency

_limits: dict[str, int] = {}
_semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


def set_provider_limits(limits: Mapping[str, int]) -> None:
    """Cap concurrent calls per provider (e.g. `{"openai": 20}`); others stay unlimited."""
    for name, value in limits.items():
        if int(value) < 1:
            raise ValueError(f"provider limit for {name!r} must be at least 1, got {value}")
    _limits.clear()
    _limits.update({name: int(value) for name, value in limits.items()})
    _semaphores.clear()


def provider_limits() -> dict[str, int]:
    return dict(_limits)


def _semaphore(provider: str) -> asyncio.Semaphore | None:
    limit = _limits.get(provider)
    if limit is None:
        return None
    per_loop = _semaphores.setdefault(asyncio.get_running_loop(), {})
    if provider not in per_loop:
        per_loop[provider] = asyncio.Semaphore(limit)
    return per_loop[provider]


# ---------------------------------------------------------------------------- clients

SHARD_CALLS = 4
"""Concurrent calls one httpx client carries before its pool opens another client.

httpcore's connection pool scans all of a client's connections on every request and
response (once more per idle connection), so one client holding 200 connections spends
more CPU in that scan than in the request itself. Small clients, each call given the
least-loaded one, keep every scan short; connections stay alive and are reused (litellm's
default client keeps at most 20 idle, so above 20 concurrent calls it closes and reopens
a connection on nearly every request)."""

POOLED_PROVIDERS = frozenset({"openai", "anthropic", "gemini"})
"""Providers whose litellm handler takes an `AsyncHTTPHandler` as `client`."""


def _openai_via_handler() -> bool:
    return os.environ.get(OPENAI_HANDLER_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _new_handler(timeout: float | None) -> Any:
    """litellm's async HTTP handler over an httpx client configured as litellm configures
    its own (TLS, user agent, no cookies, proxies from the environment), plus pool limits."""
    import httpx
    import litellm
    from litellm.llms.custom_httpx import http_handler as hh

    client = httpx.AsyncClient(
        timeout=timeout if timeout is not None else 600.0,
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=2 * SHARD_CALLS),
        verify=hh.get_ssl_configuration(),
        cert=os.getenv("SSL_CERTIFICATE", litellm.ssl_certificate),
        headers=hh.get_default_headers(),
        cookies=hh.blocked_cookie_jar(),
        follow_redirects=True,
        http2=hh.http2_enabled(),
    )
    handler = hh.AsyncHTTPHandler(timeout=timeout)
    handler.client = client  # the documented setter: litellm will not close it
    return handler


class _ClientPool:
    """The httpx clients of one provider and api_base on one event loop."""

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self.handlers: list[Any] = []
        self.load: list[int] = []

    def acquire(self) -> tuple[int, Any]:
        """The least-loaded client and its index; a new one when every client is full."""
        best = min(range(len(self.load)), key=self.load.__getitem__, default=-1)
        if best < 0 or self.load[best] >= SHARD_CALLS:
            self.handlers.append(_new_handler(self.timeout))
            self.load.append(0)
            best = len(self.load) - 1
        self.load[best] += 1
        return best, self.handlers[best]

    def release(self, index: int) -> None:
        if index < len(self.load):  # the pool may have been closed meanwhile
            self.load[index] -= 1

    async def aclose(self) -> None:
        handlers, self.handlers, self.load = self.handlers, [], []
        for handler in handlers:
            await handler.client.aclose()


_pools: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[str, str | None], _ClientPool]
] = weakref.WeakKeyDictionary()


def _client_pool(provider: str, config: LLMConfig) -> _ClientPool | None:
    if provider not in POOLED_PROVIDERS or (provider == "openai" and not _openai_via_handler()):
        return None
    per_loop = _pools.setdefault(asyncio.get_running_loop(), {})
    key = (provider, config.api_base)
    if key not in per_loop:
        per_loop[key] = _ClientPool(config.timeout)
    return per_loop[key]


def client_counts() -> dict[str, int]:
    """httpx clients open per provider on the running event loop (tests, benchmarks)."""
    out: dict[str, int] = {}
    for (provider, _), pool in _pools.get(asyncio.get_running_loop(), {}).items():
        out[provider] = out.get(provider, 0) + len(pool.handlers)
    return out


async def aclose_clients() -> None:
    """Close the running event loop's pooled clients (at the end of a run; optional:
    they are dropped with their loop anyway)."""
    for pool in _pools.pop(asyncio.get_running_loop(), {}).values():
        await pool.aclose()


# ---------------------------------------------------------------------------- litellm


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.disable_aiohttp_transport = True
    return litellm


def provider_of(config: LLMConfig) -> str:
    """The provider name a model call goes to (the key of the concurrency caps)."""
    return config.provider or _provider(config.model, config.api_base)


@functools.lru_cache(maxsize=256)
def _provider(model: str, api_base: str | None) -> str:
    try:
        _, provider, _, _ = _litellm().get_llm_provider(model=model, api_base=api_base)
        return str(provider)
    except Exception:
        return model.split("/", 1)[0] if "/" in model else "openai"


KEY_PROVIDERS = frozenset(
    {"openai", "anthropic", "gemini", "mistral", "groq", "deepseek", "xai", "openrouter"}
)
"""Providers whose only credential is an API key (others may use cloud credentials)."""


def missing_key(config: LLMConfig, provider: str) -> list[str]:
    """The environment variables one of which should hold the provider's API key, when
    no key is set anywhere; empty when a key is present, or may not be needed (a custom
    `api_base`, a provider with other kinds of credentials)."""
    if provider not in KEY_PROVIDERS or config.api_base or config.extra.get("api_key"):
        return []
    litellm = _litellm()
    if getattr(litellm, "api_key", None) or getattr(litellm, f"{provider}_key", None):
        return []
    if provider == "openai" and (
        getattr(litellm, "api_base", None)
        or os.environ.get("OPENAI_BASE_URL")
        or os.environ.get("OPENAI_API_BASE")
    ):
        return []  # an OpenAI-compatible server named by the environment
    model = config.model
    if config.provider and not model.startswith(f"{config.provider}/"):
        model = f"{config.provider}/{model}"
    try:
        found = litellm.validate_environment(model=model)
    except Exception:
        return []
    if found.get("keys_in_environment"):
        return []
    return [str(name) for name in found.get("missing_keys") or []]


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    try:
        return int(status) if status is not None else None
    except (TypeError, ValueError):
        return None


_MISSING_CREDENTIALS = re.compile(
    r"(?i)missing credentials|missing [\w ]{0,30}api[ _-]?key|api_key client option must be set"
    r"|no (?:api )?key (?:is )?(?:set|provided|found)"
)


def classify(exc: BaseException) -> tuple[type[LLMError], bool]:
    """The error type an exception maps to, and whether another attempt may succeed."""
    litellm = _litellm()
    if _MISSING_CREDENTIALS.search(str(exc)):  # raised before any request: never retry
        return LLMAuthError, False
    if isinstance(exc, litellm.ContextWindowExceededError):
        return LLMContextWindowError, False
    if isinstance(exc, litellm.AuthenticationError | litellm.PermissionDeniedError):
        return LLMAuthError, False
    if isinstance(exc, litellm.RateLimitError):
        return LLMRateLimitError, True
    if isinstance(exc, litellm.Timeout | litellm.APIConnectionError | asyncio.TimeoutError):
        return LLMUnavailableError, True
    status = _status(exc)
    if status in (401, 403):
        return LLMAuthError, False
    if status == 429:
        return LLMRateLimitError, True
    if status is not None and (status in RETRYABLE_STATUS or status >= 500):
        return LLMUnavailableError, True
    if status is not None and 400 <= status < 500:
        return LLMBadRequestError, False
    if isinstance(exc, litellm.BadRequestError):
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
            return max(0.0, float(headers["retry-after-ms"]) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _cost(litellm: Any, response: Any) -> float:
    """The call's cost. litellm prices every response for its own logging and keeps the
    figure in `_hidden_params` (None when the model has no price); computing it again
    costs as much CPU as the HTTP exchange, so only responses without it are priced."""
    hidden = getattr(response, "_hidden_params", None)
    if isinstance(hidden, Mapping) and "response_cost" in hidden:
        try:
            return float(hidden["response_cost"] or 0.0)
        except (TypeError, ValueError):
            return 0.0
    try:
        cost = litellm.completion_cost(completion_response=response)
        return float(cost or 0.0)
    except Exception:
        return 0.0


def _message_dict(response: Any) -> dict[str, Any]:
    """The assistant message as the next request needs it: OpenAI fields, plus what a
    provider must see again (Gemini thought signatures, Anthropic thinking blocks)."""
    message = response.choices[0].message
    out: dict[str, Any] = {"role": "assistant", "content": getattr(message, "content", None)}
    calls = []
    for call in getattr(message, "tool_calls", None) or []:
        fn = call.function
        item: dict[str, Any] = {
            "id": call.id,
            "type": "function",
            "function": {"name": fn.name, "arguments": fn.arguments or "{}"},
        }
        fields = getattr(call, "provider_specific_fields", None)
        if fields:
            item["provider_specific_fields"] = dict(fields)
        calls.append(item)
    if calls:
        out["tool_calls"] = calls
    thinking = getattr(message, "thinking_blocks", None)
    if thinking:
        out["thinking_blocks"] = [dict(block) for block in thinking]
    return out


def _usage(litellm: Any, response: Any) -> Usage:
    usage = getattr(response, "usage", None)
    return Usage(
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cost=_cost(litellm, response),
        calls=1,
    )


def _raw(response: Any) -> dict[str, Any]:
    """The provider response as plain JSON data (it lands in result files)."""
    try:
        dumped = json.loads(json.dumps(response.model_dump(), default=str))
        return dumped if isinstance(dumped, dict) else {}
    except Exception:
        return {}


def _error_message(exc: BaseException, config: LLMConfig) -> str:
    text = str(exc) or type(exc).__name__
    secret = config.extra.get("api_key") if config.extra else None
    text = redact(text, [secret if isinstance(secret, str) else None])
    text = " ".join(text.split())
    return text[:500] + ("…" if len(text) > 500 else "")


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
    litellm = _litellm()
    policy = config.retry or DEFAULT_RETRY
    provider = provider_of(config)
    missing = missing_key(config, provider)
    if missing:
        raise LLMAuthError(
            f"{config.model} ({provider}): no API key: set {' or '.join(missing)}"
            " (or pass api_key in llm_extra)",
            provider=provider,
            model=config.model,
            attempts=0,
        )
    kwargs: dict[str, Any] = {
        "model": config.model,
        "messages": [dict(m) for m in messages],
        "drop_params": True,
        "max_retries": 0,  # retries are ours, not the provider SDK's
    }
    if tools:
        kwargs["tools"] = [dict(t) for t in tools]
    if config.provider:
        kwargs["custom_llm_provider"] = config.provider
    if config.api_base:
        kwargs["api_base"] = config.api_base
    if config.temperature is not None:
        kwargs["temperature"] = config.temperature
    if config.seed is not None:
        kwargs["seed"] = config.seed
    if config.timeout is not None:
        kwargs["timeout"] = config.timeout
    if config.top_p is not None:
        kwargs["top_p"] = config.top_p
    kwargs.update(config.extra)
    kwargs.update(overrides)

    retries: list[RetryRecord] = []
    attempts = max(1, config.max_attempts or policy.max_attempts)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        asked = retry_after(exc) if exc is not None else None
        if asked is not None:
            return min(asked, policy.max_retry_after)
        return policy.backoff(state.attempt_number)

    def record(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        if exc is None:
            return
        error_type, _ = classify(exc)
        retries.append(
            RetryRecord(
                attempt=state.attempt_number,
                kind=error_type.kind,
                status=_status(exc),
                message=_error_message(exc, config),
                wait=state.next_action.sleep if state.next_action else 0.0,
            )
        )

    # A caller's own client or TLS setting wins over the shared clients.
    pool = None if "client" in kwargs or "ssl_verify" in kwargs else _client_pool(provider, config)

    async def send() -> Any:
        if pool is None:
            return await litellm.acompletion(**kwargs)
        slot, client = pool.acquire()
        try:
            return await litellm.acompletion(**kwargs, client=client)
        finally:
            pool.release(slot)

    async def call() -> Any:
        semaphore = _semaphore(provider)
        if semaphore is None:
            return await send()
        async with semaphore:
            return await send()

    retrying = AsyncRetrying(
        stop=stop_after_attempt(attempts),
        wait=wait,
        retry=retry_if_exception(lambda exc: classify(exc)[1]),
        before_sleep=record,
        sleep=policy.sleep,
        reraise=True,
    )
    started = time.perf_counter()
    try:
        async for attempt in retrying:
            with attempt:
                started = time.perf_counter()
                response = await call()
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        error_type, retryable = classify(exc)
        tried = len(retries) + 1
        suffix = f" after {tried} attempts" if tried > 1 else ""
        raise error_type(
            f"{config.model} ({provider}){suffix}: {_error_message(exc, config)}",
            retryable=retryable,
            status=_status(exc),
            provider=provider,
            model=config.model,
            attempts=tried,
            retries=retries,
        ) from None
    return Completion(
        message=_message_dict(response),
        usage=_usage(litellm, response),
        retries=retries,
        raw=_raw(response),
        model=config.model,
        latency=time.perf_counter() - started,
    )
