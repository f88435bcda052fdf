"""The original's conversation messages as pydantic models (field names and types of the
upstream data model at the pinned commit): what a results file holds, and what a task's
`initial_state.message_history` must be. Its own module so the task model (`tasks`) and
the results-file model (`interchange.schema`) share it without importing each other.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Tag

__all__ = ["Message", "OpenModel", "ParticipantMessage", "Requestor", "ToolCall", "ToolMessage"]

Requestor = Literal["user", "assistant"]


class OpenModel(BaseModel):
    # Upstream writes NaN/inf floats as null (pydantic's JSON default), so a number that is
    # not finite is a damaged file; accepting it would turn averages into NaN.
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)


class ToolCall(OpenModel):
    id: str = ""
    name: str
    arguments: dict[str, Any]
    requestor: Requestor = "assistant"


class SystemMessage(OpenModel):
    role: Literal["system"]
    content: str | None = None


class ParticipantMessage(OpenModel):
    """An assistant or user message: text, tool calls, or both."""

    role: Literal["assistant", "user"]
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    turn_idx: int | None = None
    timestamp: str | None = None
    cost: float | None = None
    usage: dict[str, Any] | None = None


class ToolMessage(OpenModel):
    id: str
    role: Literal["tool"]
    content: str | None = None
    requestor: Requestor = "assistant"
    error: bool = False
    turn_idx: int | None = None
    timestamp: str | None = None


class MultiToolMessage(OpenModel):
    role: Literal["tool"]
    tool_messages: list[ToolMessage]


_KINDS = {"system": "system", "assistant": "participant", "user": "participant"}


def _message_kind(value: Any) -> str | None:
    """Which model a message is, by its role: a damaged message is then reported against
    that model (`messages.3.tool.content: ...`), not against every model of the union."""
    data = value if isinstance(value, dict) else getattr(value, "__dict__", {})
    role = data.get("role")
    if role == "tool":
        return "multi_tool" if "tool_messages" in data else "tool"
    return _KINDS.get(role) if isinstance(role, str) else None


Message = Annotated[
    Annotated[SystemMessage, Tag("system")]
    | Annotated[ParticipantMessage, Tag("participant")]
    | Annotated[ToolMessage, Tag("tool")]
    | Annotated[MultiToolMessage, Tag("multi_tool")],
    Discriminator(
        _message_kind,
        custom_error_type="message_role",
        custom_error_message="role should be 'system', 'assistant', 'user' or 'tool'",
    ),
]
