"""Decoding a gym action: a text reply to the user, or one tool call.

Accepted tool-call shapes (as objects or as their JSON text):

* an OpenAI tool call: `{"id": "call_1", "type": "function",
  "function": {"name": "get_user_details", "arguments": "{\"user_id\": \"...\"}"}}`
  (`arguments` may also be an object);
* an assistant message with exactly one of those in `tool_calls` (and no text, or
  text that is then dropped: one action is one tool call *or* one message);
* a flat `{"name": ..., "arguments": {...}}` (`kwargs` is accepted for `arguments`);
* a `tau_adapters.protocol.ToolCall`.

Any other string is a message to the user, JSON or not, so an agent that quotes JSON to
a customer is not mistaken for a tool call unless the JSON has one of the shapes above.
A string longer than the action space's `MAX_TEXT_LENGTH` is refused: it is outside the
declared space, and a runaway generation should not reach the (paid) user model.
"""

from __future__ import annotations

from typing import Any

from tau_adapters import jsonsafe
from tau_adapters.protocol import ToolCall
from tau_bench.gym.spaces import MAX_TEXT_LENGTH

_FLAT_KEYS = frozenset({"id", "type", "name", "arguments", "kwargs"})


class InvalidActionError(ValueError):
    """An action that is neither a text reply nor a single well-formed tool call."""


def _arguments(value: Any) -> Any:
    """JSON-text arguments decoded; undecodable text is passed on (the domain answers
    with an error observation, as it would to a model that sent it)."""
    if isinstance(value, str):
        return jsonsafe.loads_or_text(value) if value.strip() else {}
    return {} if value is None else value


def _from_dict(data: dict[str, Any], call_id: str) -> ToolCall | str:
    if "tool_calls" in data:
        calls = data.get("tool_calls")
        if calls is None:
            calls = []
        if not isinstance(calls, list | tuple):
            raise InvalidActionError(
                f"'tool_calls' must be a list of tool calls, not {type(calls).__name__}"
            )
        if not calls:
            content = data.get("content")
            if content is not None and not isinstance(content, str):
                raise InvalidActionError("a message's 'content' must be text")
            return content or ""
        if len(calls) != 1:
            raise InvalidActionError(
                f"one action is one tool call; this message has {len(calls)} "
                "(send them in consecutive steps)"
            )
        call = calls[0]
        if not isinstance(call, dict):
            raise InvalidActionError("tool_calls[0] is not an object")
        return _from_dict(call, call_id)
    if "function" in data:
        function = data["function"]
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise InvalidActionError("a tool call's 'function' needs a string 'name'")
        return ToolCall(
            id=str(data.get("id") or call_id),
            name=function["name"],
            arguments=_arguments(function.get("arguments")),
            raw=data,
        )
    if isinstance(data.get("name"), str) and set(data) <= _FLAT_KEYS:
        args = data["arguments"] if "arguments" in data else data.get("kwargs")
        return ToolCall(
            id=str(data.get("id") or call_id),
            name=data["name"],
            arguments=_arguments(args),
            raw=data,
        )
    if data.get("role") == "assistant" and isinstance(data.get("content"), str):
        return data["content"]
    raise InvalidActionError(
        "an object action must be a tool call ({'function': {...}} or {'name', 'arguments'}) "
        "or an assistant message"
    )


def _looks_like_call(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    if "function" in data or "tool_calls" in data:
        return True
    return isinstance(data.get("name"), str) and "arguments" in data and set(data) <= _FLAT_KEYS


def _check_length(text: str) -> None:
    if len(text) > MAX_TEXT_LENGTH:
        raise InvalidActionError(
            f"a text action has at most {MAX_TEXT_LENGTH} characters, not {len(text)}"
        )


def parse_action(action: Any, call_id: str) -> ToolCall | str:
    """The tool call or the text reply `action` stands for; `call_id` names a call that
    carries no id of its own."""
    if isinstance(action, ToolCall):
        return action
    if isinstance(action, dict):
        parsed = _from_dict(action, call_id)
        if isinstance(parsed, str):  # an assistant message's text
            _check_length(parsed)
        return parsed
    if isinstance(action, str):
        _check_length(action)
        text = action.strip()
        if text.startswith("{") and text.endswith("}"):
            data = jsonsafe.loads_or_text(text)
            if _looks_like_call(data):
                return _from_dict(data, call_id)
        return action
    raise InvalidActionError(
        f"an action is a string or a tool-call object, not {type(action).__name__}"
    )
