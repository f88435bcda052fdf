"""The client-tools A2A extension: tool calls travel as DataParts (see docs/a2a.md).

* The agent declares `EXTENSION_URI` in its card's `capabilities.extensions`.
* The client activates it (`A2A-Extensions` header and `Message.extensions`) and offers
  the tools in the first message of a conversation:
  `{"type": "tool_schemas", "tools": [OpenAI function schemas], "policy"?: str}`.
* The agent asks for a tool run with a DataPart in its reply (status message, artifact or
  direct message): `{"type": "tool_call", "id": str, "name": str, "arguments": object}`.
* The client answers in its next message of the same task and context, one DataPart per
  answered call, in call order: `{"type": "tool_result", "call_id": str, "name": str,
  "content": str, "is_error": bool}`. Calls without a result were never run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tau_adapters import jsonsafe

EXTENSION_URI = "urn:tau-adapters:a2a:client-tools:v1"
TOOL_SCHEMAS = "tool_schemas"
TOOL_CALL = "tool_call"
TOOL_RESULT = "tool_result"


class ConventionError(ValueError):
    """A payload that claims to follow the convention but does not."""


def tool_schemas_payload(tools: list[dict[str, Any]], policy: str | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {"type": TOOL_SCHEMAS, "tools": tools}
    if policy:
        payload["policy"] = policy
    return payload


def tool_call_payload(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"type": TOOL_CALL, "id": call_id, "name": name, "arguments": arguments}


def tool_result_payload(call_id: str, name: str, content: str, is_error: bool) -> dict[str, Any]:
    return {
        "type": TOOL_RESULT,
        "call_id": call_id,
        "name": name,
        "content": content,
        "is_error": is_error,
    }


def kind_of(data: Any) -> str | None:
    """The convention type of a DataPart's data, or None for foreign data."""
    if isinstance(data, Mapping) and isinstance(data.get("type"), str):
        kind = data["type"]
        return kind if kind in {TOOL_SCHEMAS, TOOL_CALL, TOOL_RESULT} else None
    return None


def parse_tool_call(data: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(id, name, arguments) of a tool_call payload; ConventionError when malformed."""
    call_id, name, arguments = data.get("id"), data.get("name"), data.get("arguments", {})
    if not isinstance(name, str) or not name:
        raise ConventionError(f"tool_call without a name: {_short(data)}")
    if not isinstance(call_id, str) or not call_id:
        raise ConventionError(f"tool_call {name!r} without a string id")
    if isinstance(arguments, str):
        try:
            arguments = jsonsafe.loads(arguments) if arguments.strip() else {}
        except jsonsafe.JSONDepthError as exc:
            raise ConventionError(f"tool_call {name!r}: arguments {exc}") from None
        except ValueError:
            raise ConventionError(f"tool_call {name!r}: arguments are not JSON") from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ConventionError(f"tool_call {name!r}: arguments must be an object")
    return call_id, name, arguments


def parse_tool_result(data: Mapping[str, Any]) -> tuple[str, str, bool]:
    """(call_id, content, is_error) of a tool_result payload."""
    call_id, content = data.get("call_id"), data.get("content")
    if not isinstance(call_id, str) or not isinstance(content, str):
        raise ConventionError(f"tool_result needs string call_id and content: {_short(data)}")
    return call_id, content, bool(data.get("is_error", False))


def _short(data: Any, limit: int = 200) -> str:
    text = json.dumps(data, default=str)
    return text if len(text) <= limit else text[:limit] + "..."
