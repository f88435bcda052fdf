"""Read a DetectIntentResponse: any number of messages, of any kind, in any order.

Text goes to the user, `tool_call`s are surfaced as tool calls, `end_interaction` and
`live_agent_handoff` end the episode; everything else (payloads, knowledge cards,
audio text, conversation_success, telephony transfer...) is only recorded: a kind we do
not understand must never crash an episode.

Read on the raw protobuf, not through proto-plus: every proto-plus attribute access
marshals, and this runs on every DetectIntent answer (the adapter's hot path).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from adapters.dialogflow.structs import message_to_dict


@dataclass
class PendingToolCall:
    """A tool call as Dialogflow sent it: `tool` is a resource name, `action` a function."""

    tool: str
    action: str
    input_parameters: Any  # google.protobuf.Struct


@dataclass
class ParsedResponse:
    texts: list[str] = field(default_factory=list)
    tool_calls: list[PendingToolCall] = field(default_factory=list)
    end_interaction: bool = False
    handoff: bool = False
    conversation_success: bool = False
    other: list[dict[str, Any]] = field(default_factory=list)
    generative_info: dict[str, Any] | None = None
    match_type: str = ""


def raw(message: Any) -> Any:
    """The raw protobuf of a proto-plus message (a raw message as it is)."""
    cls = type(message)
    return cls.pb(message) if hasattr(cls, "pb") else message


def message_kind(message: Any) -> str | None:
    """Which member of the ResponseMessage `message` oneof is set (None: none)."""
    kind: str | None = raw(message).WhichOneof("message")
    return kind


def parse_response(response: Any, *, full: bool = True) -> ParsedResponse:
    """Sort a DetectIntentResponse's messages (proto-plus or raw) by what the loop must do;
    `full=False` (the compact trace) skips converting `generative_info` to a dict."""
    parsed = ParsedResponse()
    pb_result = raw(response).query_result
    for message in pb_result.response_messages:
        kind = message.WhichOneof("message")
        if kind == "text":
            text = " ".join(t for t in message.text.text if t)
            if text:
                parsed.texts.append(text)
        elif kind == "tool_call":
            call = message.tool_call
            parsed.tool_calls.append(
                PendingToolCall(
                    tool=call.tool, action=call.action, input_parameters=call.input_parameters
                )
            )
        elif kind == "end_interaction":
            parsed.end_interaction = True
        elif kind == "live_agent_handoff":
            parsed.handoff = True
            parsed.other.append({"kind": kind, "message": message_to_dict(message)})
        elif kind == "conversation_success":
            parsed.conversation_success = True
            parsed.other.append({"kind": kind, "message": message_to_dict(message)})
        else:
            parsed.other.append({"kind": kind or "empty", "message": message_to_dict(message)})
    if full and pb_result.HasField("generative_info"):
        parsed.generative_info = message_to_dict(pb_result.generative_info)
    if pb_result.HasField("match"):
        match = pb_result.match
        parsed.match_type = match.MatchType.Name(match.match_type)
    return parsed
