"""What a model reply becomes: the assistant message, usage, cost, raw JSON; and what a
reply must look like before it becomes one (`checked_reply`, `token_count`)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tau_adapters.protocol import Usage, clean_usage
from tau_bench.llm.errors import LLMMalformedReplyError
from tau_bench.llm.retry import RetryRecord

MAX_CALL_TOKENS = 10**9
"""More tokens than any model takes or writes in one call: a count above it is a broken
server's, recorded as unknown (0) rather than summed into a run's totals and cost."""

TOKEN_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")


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


def cost(litellm: Any, response: Any) -> float:
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
        value = litellm.completion_cost(completion_response=response)
        return float(value or 0.0)
    except Exception:
        return 0.0


def message_dict(response: Any) -> dict[str, Any]:
    """The assistant message as the next request needs it: OpenAI fields, plus what a
    provider must see again (Gemini thought signatures, Anthropic thinking blocks)."""
    message = response.choices[0].message  # one there is (`complete._with_choices`)
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


def usage_of(litellm: Any, response: Any) -> Usage:
    """Token counts and cost of one call; a count that is not a usable number is unknown
    (0), and so is a cost litellm derived from one."""
    usage = getattr(response, "usage", None)
    raw = [getattr(usage, name, 0) or 0 for name in TOKEN_FIELDS[:2]]
    counts = [token_count(value) for value in raw]
    trusted = all(count == value for count, value in zip(counts, raw, strict=True))
    found = Usage(
        prompt_tokens=counts[0],
        completion_tokens=counts[1],
        cost=cost(litellm, response) if trusted else 0.0,
        calls=1,
    )
    return clean_usage(found)[0]


def token_count(value: Any) -> int:
    """A token count as reported, or 0 (unknown) when it is not a finite number from 0 to
    `MAX_CALL_TOKENS` (NaN, negative, 1e308, a string): one such figure would otherwise
    make a run's token and cost totals meaningless."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if not math.isfinite(value) or not 0 <= value <= MAX_CALL_TOKENS:
        return 0
    return int(value)


def clean_usage_dict(usage: Any) -> dict[str, Any]:
    """An OpenAI `usage` object with every token count made a `token_count` (nested
    `*_details` counts included; details that are not objects are dropped); anything
    but an object becomes all zeros (unknown)."""
    if not isinstance(usage, Mapping):
        return dict.fromkeys(TOKEN_FIELDS, 0)
    out: dict[str, Any] = {}
    for key, value in usage.items():
        if key in TOKEN_FIELDS:
            out[key] = token_count(value)
        elif str(key).endswith("_details"):
            if isinstance(value, Mapping):
                out[key] = {k: _detail(v) for k, v in value.items()}
        else:
            out[key] = value
    return out


def _detail(value: Any) -> Any:
    """A `*_details` entry: a number is a token count; anything else is kept (null)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return token_count(value)
    return value


def checked_reply(data: Any) -> dict[str, Any]:
    """A chat-completions reply (parsed JSON) whose shape the rest of the code can rely
    on, with its usage cleaned (`clean_usage_dict`); an `LLMMalformedReplyError` saying
    what is wrong otherwise. Checked once, where the reply arrives, on either path."""
    problem = reply_problem(data)
    if problem:
        raise LLMMalformedReplyError(f"malformed reply: {problem}")
    if "usage" in data and data["usage"] is not None:
        usage = clean_usage_dict(data["usage"])
        if usage != data["usage"]:
            data = {**data, "usage": usage}
    return data


def reply_problem(data: Any) -> str | None:
    """What makes `data` no chat completion the callers can read, or None."""
    if not isinstance(data, Mapping):
        return f"the reply is {_kind(data)}, expected a JSON object"
    choices = data.get("choices")
    if not isinstance(choices, list):
        return f"choices is {_kind(choices)}, expected a list"
    if not choices:
        return "it has no choices"
    where = "choices[0]"
    if not isinstance(choices[0], Mapping):
        return f"{where} is {_kind(choices[0])}, expected an object"
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        return f"{where}.message is {_kind(message)}, expected an object"
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        return f"{where}.message.content is {_kind(content)}, expected a string"
    calls = message.get("tool_calls")
    if calls is None:
        return None
    if not isinstance(calls, list):
        return f"{where}.message.tool_calls is {_kind(calls)}, expected a list"
    for index, call in enumerate(calls):
        spot = f"{where}.message.tool_calls[{index}]"
        if not isinstance(call, Mapping):
            return f"{spot} is {_kind(call)}, expected an object"
        if not isinstance(call.get("function"), Mapping):
            return f"{spot}.function is {_kind(call.get('function'))}, expected an object"
    return None


def _kind(value: Any) -> str:
    """How a JSON value is named in a problem: `a string`, `null`..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, Mapping) else type(value).__name__


def raw_json(response: Any) -> dict[str, Any]:
    """The provider response as plain JSON data (it lands in result files)."""
    try:
        dumped = json.loads(json.dumps(response.model_dump(), default=str))
        return dumped if isinstance(dumped, dict) else {}
    except Exception:
        return {}
