"""Trajectory messages in the original's (tau2) message format, as small typed objects.

A trajectory is a list of messages: `assistant`/`user` messages carry text `content` or
`tool_calls` (each with a `requestor`), `tool` messages carry the result of one call (`id`
echoes the call id, `content`, `error`). `from_dict`/`to_dict` read and write the
original's JSON shape, so stored simulations and task histories load as is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "assistant", "user", "tool"]

__all__ = ["Message", "ToolCall", "messages_from_dicts"]


@dataclass
class ToolCall:
    """One tool call; `requestor` says whose toolkit it targets (assistant or user)."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    requestor: str = "assistant"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ToolCall:
        return cls(
            id=str(d.get("id", "")),
            name=d["name"],
            arguments=d.get("arguments") or {},
            requestor=d.get("requestor") or "assistant",
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "arguments": self.arguments,
            "requestor": self.requestor,
        }


@dataclass
class Message:
    """A trajectory message; tool results have role `tool`, `id`, `requestor`, `error`."""

    role: str
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    id: str | None = None
    requestor: str = "assistant"
    error: bool = False

    def is_tool_call(self) -> bool:
        return self.role in ("assistant", "user") and bool(self.tool_calls)

    def has_text(self) -> bool:
        return self.content is not None and bool(self.content.strip())

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Message:
        calls = d.get("tool_calls")
        return cls(
            role=d["role"],
            content=d.get("content"),
            tool_calls=[ToolCall.from_dict(c) for c in calls] if calls else None,
            id=d.get("id"),
            requestor=d.get("requestor") or "assistant",
            error=bool(d.get("error", False)),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.role == "tool":
            out.update(id=self.id, requestor=self.requestor, error=self.error)
        elif self.tool_calls:
            out["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        return out


def messages_from_dicts(items: list[Any]) -> list[Message]:
    """Messages from the original's JSON (already-typed messages pass through)."""
    return [m if isinstance(m, Message) else Message.from_dict(m) for m in items]
