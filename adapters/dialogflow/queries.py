"""What goes into a Dialogflow DetectIntent: text and tool-result queries, the session
marker, and the long-message split.

Requests are built as raw protobuf (proto-plus would marshal every field on every
request); kept apart from the episode logic so the wire shapes are in one place.
"""

from __future__ import annotations

from typing import Any

from adapters.dialogflow.responses import PendingToolCall, raw

SESSION_MARKER = "tau_session"
NOT_EXECUTED = "Error: tool call not executed (the evaluation harness limits tool calls per turn)"
TEXT_HINT_LENGTH = 256  # Dialogflow's documented text-input limit (ES; CX likely similar)


def split_sentences(text: str, limit: int) -> list[str]:
    """`text` as consecutive pieces of at most `limit` characters, cut after sentence
    ends (`.`, `!`, `?` then a space) where possible, else at a space, else hard."""
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[: limit + 1]
        cut = max(window.rfind(end, 0, limit) for end in (". ", "! ", "? "))
        cut = cut + 1 if cut > 0 else window.rfind(" ", 0, limit + 1)
        if cut <= 0:
            cut = limit
        pieces.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        pieces.append(rest)
    return pieces


def session_was_reset(response: Any) -> bool:
    """Whether a later response's session parameters lack the first request's marker
    (only when the agent reports parameters at all)."""
    params = raw(response).query_result.parameters
    return bool(params.fields) and SESSION_MARKER not in params.fields


def is_error_observation(text: str) -> bool:
    """τ-bench's error observations (what `Env.execute` returns for failures)."""
    return text.startswith("Error:") or text.startswith("Unknown action")


def tool_call_result(call: PendingToolCall, content: str, is_error: bool) -> Any:
    """The one documented shape of an observation sent back to Dialogflow (raw protobuf:
    requests are built raw on the hot path, see `DialogflowAdapter._request`)."""
    from google.cloud import dialogflowcx_v3beta1 as cx

    result = cx.ToolCallResult.pb()(tool=call.tool, action=call.action)
    if is_error or is_error_observation(content):
        result.error.message = content
    else:
        result.output_parameters["result"] = content
    return result


def text_query(text: str, language_code: str) -> Any:
    """A raw QueryInput carrying user text."""
    from google.cloud import dialogflowcx_v3beta1 as cx

    query = cx.QueryInput.pb()(language_code=language_code)
    query.text.text = text
    return query


def result_query(result: Any, language_code: str) -> Any:
    """A raw QueryInput carrying one raw ToolCallResult."""
    from google.cloud import dialogflowcx_v3beta1 as cx

    query = cx.QueryInput.pb()(language_code=language_code)
    query.tool_call_result.CopyFrom(result)
    return query
