"""Read a bot reply with the config's JMESPath mapping: texts, tool calls, end, handoff.

A reply that does not fit (no text and no tool call, a tool call without a name, arguments
that are neither an object nor a JSON string holding one...) raises `MappingError`; the
adapter turns it into an `AdapterProtocolError` that quotes the payload.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jmespath

from adapters.http.config import ResponseMapping
from tau_adapters import jsonsafe
from tau_adapters.protocol import ToolCall


class MappingError(ValueError):
    pass


@dataclass
class MappedReply:
    messages: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    end: bool = False
    handoff: bool = False


_REASON_LIMIT = 200


def evaluate(key: str, expr: str | None, document: Any) -> Any:
    """The config's expression `key` (`response.end`...) applied to a bot's reply. Any
    failure is the reply's: a `MappingError` naming the key and the expression (JMESPath's
    own errors, and what its built-ins raise on odd values: `ceil` of 1e999 overflows,
    of NaN is a ValueError)."""
    if not expr:
        return None
    try:
        return jmespath.search(expr, document)
    except Exception as exc:  # whatever the reply makes the expression do
        what = " ".join(str(exc).split())
        if len(what) > _REASON_LIMIT:
            what = what[:_REASON_LIMIT] + "..."
        kind = type(exc).__name__
        raise MappingError(
            f"{key} ({expr!r}) failed on the reply: {kind}{': ' + what if what else ''}"
        ) from None


def _texts(value: Any, expr: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, list):
        out = []
        for item in value:
            if item is None or item == "":
                continue
            if not isinstance(item, str):
                raise MappingError(
                    f"response.messages ({expr!r}) should give strings, got {type(item).__name__}"
                )
            out.append(item)
        return out
    raise MappingError(
        f"response.messages ({expr!r}) should give a string or a list of strings, "
        f"got {type(value).__name__}"
    )


def _arguments(value: Any, name: str) -> Any:
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            decoded = jsonsafe.loads(value)
        except jsonsafe.JSONDepthError as exc:
            raise MappingError(f"arguments of tool call {name!r}: {exc}") from None
        except ValueError:
            raise MappingError(
                f"arguments of tool call {name!r} are a string that is not JSON"
            ) from None
        value = decoded
    if not isinstance(value, dict):
        raise MappingError(
            f"arguments of tool call {name!r} should be an object, got {type(value).__name__}"
        )
    return value


def _calls(value: Any, mapping: ResponseMapping, counter: int) -> list[ToolCall]:
    if value is None:
        return []
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise MappingError(
            f"response.tool_calls ({mapping.tool_calls!r}) should give a list of objects, "
            f"got {type(value).__name__}"
        )
    spec = mapping.tool_call
    calls: list[ToolCall] = []
    for i, item in enumerate(value):
        if item is None:
            continue
        if not isinstance(item, dict):
            raise MappingError(f"tool call #{i} should be an object, got {type(item).__name__}")
        name = evaluate("response.tool_call.name", spec.name, item)
        if not isinstance(name, str) or not name:
            raise MappingError(
                f"tool call #{i} has no name at response.tool_call.name ({spec.name!r})"
            )
        call_id = evaluate("response.tool_call.id", spec.id, item)
        if call_id is None or call_id == "":
            call_id = f"call_{counter + len(calls) + 1}"
        elif isinstance(call_id, bool) or not isinstance(call_id, str | int):
            # An id is text the bot gets back with the result: an object's Python form
            # (`{'x': 1}`) is neither what it sent nor JSON.
            raise MappingError(
                f"tool call #{i} ({name!r}) has an id that is a {type(call_id).__name__}, "
                f"not text or a number, at response.tool_call.id ({spec.id!r})"
            )
        arguments = _arguments(evaluate("response.tool_call.arguments", spec.arguments, item), name)
        calls.append(ToolCall(id=str(call_id), name=name, arguments=arguments, raw=item))
    return calls


def map_reply(
    document: Any, mapping: ResponseMapping, *, counter: int = 0, allow_empty: bool = False
) -> MappedReply:
    """Apply the mapping. `counter` numbers tool calls that come without an id; with
    `allow_empty` a reply holding nothing is not an error (the caller merges replies)."""
    texts = _texts(
        evaluate("response.messages", mapping.messages, document), mapping.messages or ""
    )
    calls = _calls(evaluate("response.tool_calls", mapping.tool_calls, document), mapping, counter)
    end = bool(evaluate("response.end", mapping.end, document))
    handoff = bool(evaluate("response.handoff", mapping.handoff, document))
    if not allow_empty and not texts and not calls and not end and not handoff:
        raise MappingError(
            "the reply holds no message and no tool call "
            f"(response.messages={mapping.messages!r}, response.tool_calls={mapping.tool_calls!r})"
        )
    return MappedReply(messages=texts, tool_calls=calls, end=end, handoff=handoff)
