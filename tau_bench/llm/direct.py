"""The direct path: OpenAI-compatible calls through the official `openai` client.

Why: litellm's request building, cost calculation and logging cost ~5 ms of CPU per call,
ten times what the runner itself spends (docs/performance.md). For endpoints that speak
OpenAI's chat-completions API as is (OpenAI, vLLM/SGLang servers, gateways) a call needs
none of it: the body is what we would have asked litellm to send, the answer is already
in OpenAI's shape, and the price is two numbers of litellm's price map.

The path is taken automatically only where it is exact (`is_exact`): litellm's provider
is "openai", the model is not one litellm rewrites parameters for (o-series, gpt-5), and
every extra argument is a plain chat-completions parameter. `--llm-path litellm` or
`direct` forces one path for a run (`run_llm_path`); `set_llm_path` sets the process's.
Retries, error classes, redaction and records are those of `tau_bench.llm.complete`;
only the transport and pricing differ.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import itertools
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import orjson

from tau_bench.llm.config import LLMConfig
from tau_bench.llm.direct_clients import shards_for
from tau_bench.llm.errors import LLMContextWindowError, LLMError, LLMUnavailableError
from tau_bench.llm.response import checked_reply, clean_usage_dict
from tau_bench.llm.runtime import litellm

LLM_PATHS = ("auto", "litellm", "direct")

BODY_PARAMS = frozenset(
    {
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "n",
        "response_format",
        "tool_choice",
        "parallel_tool_calls",
        "user",
        "reasoning_effort",
        "extra_body",
        "extra_headers",
        "api_key",
    }
)
"""`llm_extra` / override keys the direct path sends as litellm would (anything else:
litellm, which knows what to do with it)."""

REWRITTEN_MODELS = ("o1", "o3", "o4", "gpt-5")
"""Model name prefixes whose parameters litellm rewrites (temperature, max_tokens...)."""

_path = "auto"
_run_path: contextvars.ContextVar[str | None] = contextvars.ContextVar("llm_path", default=None)


def checked_llm_path(path: str) -> str:
    """`path` if it names a model-call path; the one check of every place that takes one
    (a run, the process, the gym's env), so all say the same."""
    if path not in LLM_PATHS:
        raise ValueError(f"unknown llm path {path!r} (choose from {', '.join(LLM_PATHS)})")
    return path


def set_llm_path(path: str) -> None:
    """Choose the model-call path of this process: auto (direct where exact), litellm,
    direct. A run's own path (`run_llm_path`) wins over it while the run goes on."""
    global _path
    _path = checked_llm_path(path)


@contextlib.contextmanager
def run_llm_path(path: str) -> Iterator[None]:
    """`path` for the model calls made inside, and in the tasks started inside (a run's
    pre-flight and episodes): runs going on at once in one process (`tau serve`) keep
    their own, and the process's path (`set_llm_path`) is left as it was."""
    token = _run_path.set(checked_llm_path(path))
    try:
        yield
    finally:
        _run_path.reset(token)


def llm_path() -> str:
    """The path in force: the run's (`run_llm_path`), else the process's."""
    return _run_path.get() or _path


@functools.lru_cache(maxsize=256)
def _route(model: str, provider: str | None, api_base: str | None) -> tuple[str, str]:
    """(model name as sent, litellm provider) of a config's model."""
    try:
        name, found, _, _ = litellm().get_llm_provider(
            model=model, custom_llm_provider=provider, api_base=api_base
        )
        return str(name), str(found)
    except Exception:
        return model, provider or ""


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool | list | dict)


def is_exact(config: LLMConfig, overrides: Mapping[str, Any]) -> bool:
    """Whether the direct path sends exactly what litellm would (see the module docstring)."""
    name, provider = _route(config.model, config.provider, config.api_base)
    if provider != "openai" or name.startswith(REWRITTEN_MODELS):
        return False
    for key, value in (*config.extra.items(), *overrides.items()):
        if key not in BODY_PARAMS or not _plain(value):
            return False
    return True


def use_direct(config: LLMConfig, overrides: Mapping[str, Any]) -> bool:
    """Whether this call takes the direct path under `llm_path()`."""
    path = _run_path.get() or _path
    if path == "litellm":
        return False
    if path == "direct":
        return True
    return is_exact(config, overrides)


def refusal(config: LLMConfig) -> str | None:
    """Why the direct path cannot make this call, or None. It speaks OpenAI's wire to
    the endpoint `base_url` finds, so a model litellm routes to another provider
    (`anthropic/...`, `groq/...`, `azure/...`) would reach OpenAI's API, or the
    `OPENAI_BASE_URL` server, under a name it does not serve: refused before any call."""
    provider = _route(config.model, config.provider, config.api_base)[1]
    if provider == "openai":
        return None
    return (
        f"--llm-path direct sends OpenAI-format calls only, and {config.model} goes to "
        f"litellm provider {provider or 'unknown'}: name an OpenAI-compatible endpoint's "
        "model as openai/<name> with its api_base (--api-base, --user-api-base), or "
        "use --llm-path auto"
    )


def base_url(config: LLMConfig) -> str:
    """The endpoint, found as litellm finds it for OpenAI calls."""
    module = litellm()
    return (
        config.api_base
        or getattr(module, "api_base", None)
        or os.environ.get("OPENAI_BASE_URL")
        or os.environ.get("OPENAI_API_BASE")
        or "https://api.openai.com/v1"
    )


def api_key(config: LLMConfig) -> str:
    """The key sent (a placeholder for keyless OpenAI-compatible servers)."""
    module = litellm()
    key = (
        config.extra.get("api_key")
        or getattr(module, "api_key", None)
        or getattr(module, "openai_key", None)
        or os.environ.get("OPENAI_API_KEY")
    )
    return str(key) if key else "no-key"


def request_body(
    config: LLMConfig,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    overrides: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, str]]:
    """The JSON body and extra headers of one call (what litellm sends for OpenAI)."""
    body: dict[str, Any] = {
        "model": _route(config.model, config.provider, config.api_base)[0],
        "messages": [_without_null_content(m) for m in messages],
    }
    if tools:
        body["tools"] = tools if isinstance(tools, ToolSchemas) else list(tools)
    optional = {"temperature": config.temperature, "seed": config.seed, "top_p": config.top_p}
    body.update({k: v for k, v in optional.items() if v is not None})
    headers: dict[str, str] = {}
    for key, value in (*config.extra.items(), *overrides.items()):
        if key == "api_key" or value is None:
            continue
        if key == "extra_body":
            body.update(dict(value))
        elif key == "extra_headers":
            headers.update({str(k): str(v) for k, v in dict(value).items()})
        else:
            body[key] = value
    return body, headers


def _without_null_content(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """litellm leaves `"content": null` out of a message (an assistant's tool calls)."""
    if "content" in message and message["content"] is None:
        return {k: v for k, v in message.items() if k != "content"}
    return message


class ToolSchemas(tuple[Mapping[str, Any], ...]):
    """An episode's tool schemas, encoded as JSON once: the direct path splices that text
    into every request instead of encoding the same schemas again (~0.1 ms per call for
    the airline domain's 14 tools). The schemas must not be changed once wrapped."""

    def __new__(cls, tools: Iterable[Mapping[str, Any]]) -> ToolSchemas:
        return super().__new__(cls, tools)

    @functools.cached_property
    def json(self) -> bytes:
        return compact_json(list(self))


def _dumps(value: Any) -> str:
    """Compact JSON, as the openai client encodes a body."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def compact_json(value: Any) -> bytes:
    """`_dumps(value)` as UTF-8, from orjson where that is the same JSON (a long history
    encodes ~20 times faster: tens of µs of CPU per call).

    orjson writes NaN and the infinities as `null` where `_dumps` refuses them, so
    anything with a `null` in it is encoded by `_dumps` instead (bodies seldom hold one:
    null contents and unset options are left out). What orjson cannot encode (a key that
    is not a string, a huge integer, a lone surrogate, deep nesting) goes to `_dumps` as
    well, which encodes it or raises as before. Floats may be spelled differently
    (`1e16` for `1e+16`): the same numbers."""
    try:
        data = orjson.dumps(value)
    except orjson.JSONEncodeError:
        data = b"null"
    if b"null" in data:
        return _dumps(value).encode()
    return data


def encode_body(body: Mapping[str, Any]) -> bytes:
    """The request's JSON, with the tools' cached text when they are `ToolSchemas`."""
    tools = body.get("tools")
    if not isinstance(tools, ToolSchemas):
        return compact_json(body)
    rest = compact_json({k: v for k, v in body.items() if k != "tools"})
    return b"".join((rest[:-1], b"," if len(rest) > 2 else b"", b'"tools":', tools.json, b"}"))


_request_ids = itertools.count()


@functools.lru_cache(maxsize=1)
def _options_template() -> Any:
    """The options of a chat-completions POST, built once: `post` builds them per call,
    resolving (deep-copying) every default field each time."""
    from openai._models import FinalRequestOptions

    return FinalRequestOptions.construct(method="post", url="/chat/completions", max_retries=0)


async def send(
    config: LLMConfig,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    overrides: Mapping[str, Any],
) -> dict[str, Any]:
    """One HTTP exchange through the openai client's `request`: the response as JSON
    data, checked (`response.checked_reply`). The body is encoded here (the SDK would
    walk it against its TypedDicts) and the answer is read as JSON (no response models)."""
    import httpx

    from tau_bench.llm.wire import parse_reply

    body, headers = request_body(config, messages, tools, overrides)
    update: dict[str, Any] = {
        "timeout": config.timeout,
        "headers": headers,
        # Unused by the OpenAI client (it sends no idempotency header), which would
        # otherwise draw a uuid4 from os.urandom for every request.
        "idempotency_key": f"tau-{os.getpid()}-{next(_request_ids)}",
    }
    try:
        update["content"] = encode_body(body)
    except (TypeError, ValueError):  # a value plain JSON cannot take: the SDK's encoder
        update["json_data"] = body
    options = _options_template().model_copy(update=update)
    shards = shards_for(
        base_url(config), api_key(config), config.timeout, config.max_response_bytes
    )
    slot, client = shards.acquire()
    try:
        response = await client.request(httpx.Response, options)
    finally:
        shards.release(slot)
    return checked_reply(parse_reply(response.content))


def classify_direct(exc: BaseException) -> tuple[type[LLMError], bool]:
    """The error type of an `openai` client failure (then as `classify` for litellm's)."""
    import openai

    from tau_bench.llm.classify import classify

    if isinstance(exc, LLMError):
        return type(exc), exc.retryable
    if isinstance(exc, openai.APIConnectionError):  # timeouts included
        return LLMUnavailableError, True
    if isinstance(exc, openai.BadRequestError):
        text = f"{getattr(exc, 'code', '')} {exc}".lower()
        if "context_length_exceeded" in text or "maximum context length" in text:
            return LLMContextWindowError, False
    return classify(exc)


def connection_reason(exc: BaseException) -> str:
    """What the openai client's "Connection error." / "Request timed out." leaves out:
    the transport's reason (a refused connection, a certificate that failed to verify, a
    proxy's refusal), or "" for any other error. litellm's errors carry it already."""
    import openai

    cause = exc.__cause__
    if not isinstance(exc, openai.APIConnectionError) or cause is None:
        return ""
    return str(cause).strip() or type(cause).__name__


def message_of(data: Mapping[str, Any]) -> dict[str, Any]:
    """The assistant message as the next request needs it (as `response.message_dict`),
    of a reply `checked_reply` accepted."""
    message = data["choices"][0]["message"]
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    calls = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        calls.append(
            {
                "id": call.get("id"),
                "type": "function",
                "function": {"name": fn.get("name"), "arguments": fn.get("arguments") or "{}"},
            }
        )
    if calls:
        out["tool_calls"] = calls
    return out


@functools.lru_cache(maxsize=256)
def _prices(model: str) -> tuple[float, float] | None:
    """(input, output) USD per token of a model with flat prices; None otherwise."""
    entry = litellm().model_cost.get(model) or litellm().model_cost.get(f"openai/{model}")
    if not entry:
        return None
    if any(
        k.startswith(("input_cost_per_token_above", "output_cost_per_token_above")) for k in entry
    ):
        return None  # tiered: litellm prices it
    try:
        return float(entry["input_cost_per_token"]), float(entry["output_cost_per_token"])
    except (KeyError, TypeError, ValueError):
        return None


def cost_of(model: str, usage: Mapping[str, Any]) -> float:
    """USD of one call from litellm's price map, as litellm computes it: flat prices
    directly; cached, reasoning or audio tokens and tiered prices through litellm. Counts
    that are not usable numbers are unknown (0, `response.clean_usage_dict`)."""
    usage = clean_usage_dict(usage)
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    details = usage.get("prompt_tokens_details") or {}
    special = (details.get("cached_tokens") or 0) or (details.get("audio_tokens") or 0)
    prices = None if special else _prices(model)
    if prices is not None:
        return prompt * prices[0] + completion * prices[1]
    if model not in litellm().model_cost and f"openai/{model}" not in litellm().model_cost:
        return 0.0
    try:
        module = litellm()
        prompt_cost, completion_cost = module.cost_per_token(
            model=model, custom_llm_provider="openai", usage_object=module.Usage(**dict(usage))
        )
        return float(prompt_cost + completion_cost)
    except Exception:
        return 0.0


def request_model(config: LLMConfig) -> str:
    """The model name sent (and priced): the config's model without litellm's prefix."""
    return _route(config.model, config.provider, config.api_base)[0]
