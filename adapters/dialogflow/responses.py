"""Read a DetectIntentResponse: any number of messages, of any kind, in any order.

Text goes to the user, `tool_call`s are surfaced as tool calls, `end_interaction` and
`live_agent_handoff` end the episode; everything else (payloads, knowledge cards,
audio text, conversation_success, telephony transfer...) is only recorded: a kind we do
not understand must never crash an episode.
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


def message_kind(message: Any) -> str | None:
    """Which member of the ResponseMessage `message` oneof is set (None: none)."""
    pb = type(message).pb(message)
    kind: str | None = pb.WhichOneof("message")
    return kind


def parse_response(response: Any, *, full: bool = True) -> ParsedResponse:
    """Sort a (proto-plus) DetectIntentResponse's messages by what the loop must do;
    `full=False` (the compact trace) skips converting `generative_info` to a dict."""
    parsed = ParsedResponse()
    result = response.query_result
    for message in result.response_messages:
        kind = message_kind(message)
        if kind == "text":
            text = " ".join(t for t in message.text.text if t)
            if text:
                parsed.texts.append(text)
        elif kind == "tool_call":
            call = message.tool_call
            pb = type(call).pb(call)
            parsed.tool_calls.append(
                PendingToolCall(
                    tool=call.tool, action=call.action, input_parameters=pb.input_parameters
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
    pb_result = type(result).pb(result)
    if full and pb_result.HasField("generative_info"):
        parsed.generative_info = message_to_dict(result.generative_info)
    if pb_result.HasField("match"):
        parsed.match_type = result.match.match_type.name
    return parsed
