"""What a litellm response becomes: the assistant message, usage, cost, raw JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tau_adapters.protocol import Usage
from tau_bench.llm.retry import RetryRecord


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


def usage_of(litellm: Any, response: Any) -> Usage:
    """Token counts and cost of one call."""
    usage = getattr(response, "usage", None)
    return Usage(
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cost=cost(litellm, response),
        calls=1,
    )


def raw_json(response: Any) -> dict[str, Any]:
    """The provider response as plain JSON data (it lands in result files)."""
    try:
        dumped = json.loads(json.dumps(response.model_dump(), default=str))
        return dumped if isinstance(dumped, dict) else {}
    except Exception:
        return {}
