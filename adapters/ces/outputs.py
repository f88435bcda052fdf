"""Read the agent's `SessionOutput`s: text, client tool calls, end of session, escalation.

One RunSession answers with a list of outputs (BidiRunSession streams the same outputs
one by one). Each carries at most one of: `text`, `tool_calls` (tools the client must
run), `end_session` (with `metadata.session_escalated = true` when the agent escalated
to a human), `payload`, `citations`, `audio`... Text and tool calls are what the
benchmark uses; the others are kept in the turn's `extra`. A tool call that names no tool
is an answer we cannot act on: `AdapterProtocolError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from adapters.ces.structs import message_dict, struct_values, to_python
from tau_adapters.protocol import AdapterProtocolError

ESCALATION_KEYS = ("session_escalated", "escalated")


@dataclass
class RawCall:
    """One tool call as the agent sent it (arguments still uncoerced)."""

    ces_id: str
    tool: str
    toolset_tool: Any
    display_name: str
    args: dict[str, Any]

    def identity(self) -> dict[str, Any]:
        """The fields a ToolResponse echoes to say which call it answers."""
        out: dict[str, Any] = {}
        if self.ces_id:
            out["id"] = self.ces_id
        if self.tool:
            out["tool"] = self.tool
        elif self.toolset_tool is not None:
            out["toolset_tool"] = self.toolset_tool
        return out


@dataclass
class Parsed:
    texts: list[str] = field(default_factory=list)
    calls: list[RawCall] = field(default_factory=list)
    end_session: bool = False
    escalated: bool = False
    end_metadata: dict[str, Any] = field(default_factory=dict)
    payloads: list[Any] = field(default_factory=list)
    other: list[str] = field(default_factory=list)
    turn_completed: bool = False
    go_away: bool = False

    @property
    def ended(self) -> bool:
        return self.end_session


def _end(parsed: Parsed, end: Any) -> None:
    pb = type(end).pb(end)
    metadata = to_python(pb.metadata) if pb.HasField("metadata") else {}
    parsed.end_session = True
    parsed.end_metadata.update(metadata if isinstance(metadata, Mapping) else {})
    parsed.escalated = parsed.escalated or any(
        parsed.end_metadata.get(k) is True for k in ESCALATION_KEYS
    )


def _calls(parsed: Parsed, tool_calls: Any) -> None:
    for call in tool_calls.tool_calls:
        pb = type(call).pb(call)
        which = pb.WhichOneof("tool_identifier")
        if which is None:
            raise AdapterProtocolError(
                f"ces: the agent sent a tool call without a tool (call {message_dict(call)})"
            )
        args = struct_values(pb.args) if pb.HasField("args") else {}
        parsed.calls.append(
            RawCall(
                ces_id=call.id,
                tool=call.tool if which == "tool" else "",
                toolset_tool=call.toolset_tool if which == "toolset_tool" else None,
                display_name=call.display_name,
                args=args,
            )
        )


def absorb(parsed: Parsed, output: Any) -> None:
    """Add one SessionOutput to `parsed`."""
    pb = type(output).pb(output)
    kind = pb.WhichOneof("output_type")
    if kind == "text":
        if output.text:
            parsed.texts.append(output.text)
    elif kind == "tool_calls":
        _calls(parsed, output.tool_calls)
    elif kind == "end_session":
        _end(parsed, output.end_session)
    elif kind == "payload":
        parsed.payloads.append(to_python(pb.payload))
    elif kind is not None:
        parsed.other.append(kind)
    parsed.turn_completed = parsed.turn_completed or output.turn_completed


def parse_outputs(outputs: Iterable[Any]) -> Parsed:
    parsed = Parsed()
    for output in outputs:
        absorb(parsed, output)
    return parsed


def absorb_server_message(parsed: Parsed, message: Any) -> None:
    """Add one BidiSessionServerMessage to `parsed`."""
    kind = type(message).pb(message).WhichOneof("message_type")
    if kind == "session_output":
        absorb(parsed, message.session_output)
    elif kind == "end_session":
        _end(parsed, message.end_session)
    elif kind == "go_away":
        parsed.go_away = True
    elif kind is None:
        raise AdapterProtocolError("ces: empty message on the session stream")
    # recognition_result / interruption_signal concern audio sessions only.
