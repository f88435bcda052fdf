"""Emulated CES sessions: a session driven by a local `AgentAdapter` (the brain).

The brain needs a `SessionContext`: the domain and, for the oracle, the task. They come
from the session variables (a `variables` input before the first text): `env`
(default the emulator's), `task_id`, `task_split` (default test), `user_id`, `trial`.
The CES adapter sends them by itself when it talks to an emulator.

A brain turn becomes outputs: one `text` per message, one `tool_calls` output with an id
per call (naming this app's tool for the function), `end_session` when it ends
(`session_escalated: true` in the metadata on handoff); the last output has
`turn_completed`. A brain may dictate the outputs verbatim through
`turn.extra["emulator_outputs"]` (SessionOutput dicts), which is how tests send
malformed answers. Tool responses must answer every pending call (by id, else by tool).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.ces.harness.emulator.store import AppRecord
from adapters.ces.structs import to_python, to_struct
from tau_adapters.protocol import (
    AgentAdapter,
    AgentTurn,
    SessionContext,
    ToolResult,
    ToolResults,
)

EMULATOR_OUTPUTS = "emulator_outputs"


class SessionError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class PendingCall:
    ces_id: str
    call_id: str
    name: str
    tool: str


@dataclass
class EmulatedSession:
    name: str
    app: AppRecord
    brain: AgentAdapter | None = None
    variables: dict[str, Any] = field(default_factory=dict)
    pending: list[PendingCall] = field(default_factory=list)
    turn_index: int = 0
    ended: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def context_for(
    variables: Mapping[str, Any], session_id: str, default_env: str, data_dir: Path | str | None
) -> SessionContext:
    """The brain's view of the episode, from the session variables (`tau_bench.stand_ins`)."""
    from tau_bench.stand_ins import TaskLookupError, session_from

    try:
        return session_from(variables, session_id, default_env, data_dir, what="session variable")
    except TaskLookupError as exc:
        raise SessionError("INVALID_ARGUMENT", str(exc)) from None


def _tool_call(session: EmulatedSession, name: str, arguments: Any, ces_id: str) -> Any:
    from google.cloud import ces_v1

    tool = session.app.tool_for_function(name)
    resource = tool.name if tool is not None else f"{session.app.app.name}/tools/unknown-{name}"
    args = arguments if isinstance(arguments, Mapping) else {"value": arguments}
    call = ces_v1.ToolCall(id=ces_id, tool=resource, display_name=name)
    type(call).pb(call).args.CopyFrom(to_struct(args))
    return call


def outputs_for(session: EmulatedSession, turn: AgentTurn | None) -> list[Any]:
    """SessionOutputs for a brain turn; registers its tool calls as pending."""
    from google.cloud import ces_v1

    session.turn_index += 1
    outputs: list[Any] = []
    scripted = turn.extra.get(EMULATOR_OUTPUTS) if turn is not None and turn.extra else None
    if scripted:
        outputs = [ces_v1.SessionOutput(item) for item in scripted]
        for output in outputs:
            for call in output.tool_calls.tool_calls if "tool_calls" in output else []:
                name = call.display_name or call.tool.rsplit("/", 1)[-1]
                session.pending.append(PendingCall(call.id, call.id, name, call.tool))
    elif turn is not None:
        outputs = [ces_v1.SessionOutput(text=text) for text in turn.messages]
        calls = []
        for call in turn.tool_calls:
            ces_id = uuid.uuid4().hex[:16]
            message = _tool_call(session, call.name, call.arguments, ces_id)
            session.pending.append(PendingCall(ces_id, call.id, call.name, message.tool))
            calls.append(message)
        if calls:
            outputs.append(ces_v1.SessionOutput(tool_calls=ces_v1.ToolCalls(tool_calls=calls)))
        if turn.handoff or turn.end_conversation:
            reason = "escalated to a human agent" if turn.handoff else "conversation complete"
            metadata = {"reason": reason, **({"session_escalated": True} if turn.handoff else {})}
            end = ces_v1.EndSession()
            type(end).pb(end).metadata.CopyFrom(to_struct(metadata))
            outputs.append(ces_v1.SessionOutput(end_session=end))
            session.ended = True
    if not outputs:
        outputs = [ces_v1.SessionOutput()]
    for output in outputs:
        output.turn_index = session.turn_index
    outputs[-1].turn_completed = True
    return outputs


def observation_of(response: Any) -> tuple[str, bool]:
    """(content, is_error) of a ToolResponse: its `output` or `error`, else the whole
    response as JSON (strings pass as they are)."""
    value = to_python(type(response).pb(response).response)
    for key, is_error in (("error", True), ("output", False)):
        if isinstance(value, Mapping) and key in value:
            inner = value[key]
            return (inner if isinstance(inner, str) else json.dumps(inner)), is_error
    return json.dumps(value), False


def results_for(session: EmulatedSession, responses: Any) -> ToolResults:
    """Match tool responses to the pending calls (all must be answered), in call order."""
    by_call: dict[str, ToolResult] = {}
    for response in responses.tool_responses:
        match = next(
            (
                p
                for p in session.pending
                if p.ces_id not in by_call
                and ((response.id and p.ces_id == response.id) or (not response.id and p.tool))
                and (not response.tool or response.tool == p.tool)
            ),
            None,
        )
        if match is None:
            raise SessionError(
                "INVALID_ARGUMENT",
                f"no pending tool call for id={response.id!r} tool={response.tool!r}",
            )
        content, is_error = observation_of(response)
        by_call[match.ces_id] = ToolResult(match.call_id, match.name, content, is_error)
    missing = [p.ces_id for p in session.pending if p.ces_id not in by_call]
    if missing:
        raise SessionError("INVALID_ARGUMENT", f"tool responses missing for calls {missing}")
    results = [by_call[p.ces_id] for p in session.pending]
    session.pending = []
    return ToolResults(results)
