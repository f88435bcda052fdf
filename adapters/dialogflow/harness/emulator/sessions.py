"""Emulated conversations: a Dialogflow session driven by a local `AgentAdapter` (the brain).

The brain needs a `SessionContext`: the domain (tools, policy) and, for the oracle, the
task. They come from the session parameters of the first request: `env`
(any `--env` name: airline, tau3/telecom...; default the emulator's), `task_id`,
`task_split` (default: the domain's, test for v1, base for τ³),
`user_id`, `trial`. The Dialogflow adapter sends them by itself when it talks to an
emulator.

Tool calls of the brain become `tool_call` messages naming this agent's tool resource
for the function; ToolCallResults are collected, and once every pending call has its
result they go to the brain as one `ToolResults`. Answers to intermediate results are
empty responses.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.dialogflow.harness.emulator.store import AgentRecord
from adapters.dialogflow.structs import python_to_struct, struct_to_python
from tau_adapters.protocol import (
    AgentAdapter,
    AgentTurn,
    SessionContext,
    ToolResult,
    ToolResults,
    UserTurn,
)

EMULATOR_MESSAGES = "emulator_messages"


class SessionError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class PendingCall:
    call_id: str
    name: str
    tool: str
    action: str


@dataclass
class EmulatedSession:
    path: str
    agent: AgentRecord
    brain: AgentAdapter | None = None
    params: dict[str, Any] = field(default_factory=dict)
    pending: list[PendingCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    last_used: float = 0.0
    ttl: float = 1800.0
    ended: bool = False
    per_result: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def context_for(
    params: Mapping[str, Any], session_id: str, default_env: str, data_dir: Path | str | None
) -> SessionContext:
    """The brain's view of the episode, from the session parameters (`tau_bench.stand_ins`)."""
    from tau_bench.stand_ins import TaskLookupError, session_from

    try:
        return session_from(params, session_id, default_env, data_dir, what="session parameter")
    except TaskLookupError as exc:
        raise SessionError("INVALID_ARGUMENT", str(exc)) from None


def observation_of(result: Any) -> tuple[str, bool]:
    """(content, is_error) of a ToolCallResult: `error.message`, or `output_parameters`'
    `result` string (any other object is passed on as JSON)."""
    if "error" in result:
        return result.error.message, True
    output = struct_to_python(type(result).pb(result).output_parameters)
    if (
        isinstance(output, Mapping)
        and set(output) == {"result"}
        and isinstance(output["result"], str)
    ):
        return output["result"], False
    return json.dumps(output), False


def _tool_call_message(session: EmulatedSession, name: str, arguments: Any) -> Any:
    from google.cloud import dialogflowcx_v3beta1 as cx

    tool = (
        session.agent.tool_for_function(name) or f"{session.agent.name}/tools/unregistered-{name}"
    )
    args = arguments if isinstance(arguments, Mapping) else {"value": arguments}
    call = cx.ToolCall(tool=tool, action=name)
    type(call).pb(call).input_parameters.CopyFrom(python_to_struct(args))
    return cx.ResponseMessage(tool_call=call)


def turn_messages(session: EmulatedSession, turn: AgentTurn) -> list[Any]:
    """Response messages for a brain turn; adds its tool calls to the pending ones.

    A brain may dictate the messages verbatim (any kinds, any order) through
    `turn.extra["emulator_messages"]`: a list of ResponseMessage dicts; tool calls in it
    are registered like the brain's own. That is how tests exercise unusual responses.
    """
    from google.cloud import dialogflowcx_v3beta1 as cx

    scripted = turn.extra.get(EMULATOR_MESSAGES) if turn.extra else None
    messages: list[Any] = []
    if scripted:
        for item in scripted:
            message = cx.ResponseMessage(item) if isinstance(item, Mapping) else item
            if "tool_call" in message:
                name = message.tool_call.action
                if not message.tool_call.tool:
                    message = _tool_call_message(
                        session,
                        name,
                        struct_to_python(
                            type(message.tool_call).pb(message.tool_call).input_parameters
                        ),
                    )
                session.pending.append(
                    PendingCall(uuid.uuid4().hex[:8], name, message.tool_call.tool, name)
                )
            messages.append(message)
        return messages
    for text in turn.messages:
        messages.append(cx.ResponseMessage(text=cx.ResponseMessage.Text(text=[text])))
    for call in turn.tool_calls:
        message = _tool_call_message(session, call.name, call.arguments)
        session.pending.append(PendingCall(call.id, call.name, message.tool_call.tool, call.name))
        messages.append(message)
    if turn.handoff:
        messages.append(
            cx.ResponseMessage(live_agent_handoff=cx.ResponseMessage.LiveAgentHandoff())
        )
    if turn.end_conversation:
        messages.append(cx.ResponseMessage(end_interaction=cx.ResponseMessage.EndInteraction()))
    return messages


async def answer_text(session: EmulatedSession, text: str) -> AgentTurn | None:
    """The brain's turn for a user message (pending calls, if any, are abandoned)."""
    assert session.brain is not None
    session.pending = []
    session.results = []
    return await session.brain.send(UserTurn(text))


async def answer_tool_result(session: EmulatedSession, result: Any) -> AgentTurn | None:
    """Record one ToolCallResult; the brain's turn once all pending calls are answered
    (or at once, alone, when the session passes results one by one: `per_result`)."""
    assert session.brain is not None
    answered = {r.call_id for r in session.results}
    match = next(
        (
            p
            for p in session.pending
            if p.call_id not in answered
            and p.action == result.action
            and (not result.tool or p.tool == result.tool)
        ),
        None,
    )
    if match is None:
        raise SessionError(
            "INVALID_ARGUMENT",
            f"no pending tool call for tool={result.tool!r} action={result.action!r}",
        )
    content, is_error = observation_of(result)
    observation = ToolResult(match.call_id, match.name, content, is_error)
    if session.per_result:
        session.pending.remove(match)
        return await session.brain.send(ToolResults([observation]))
    session.results.append(observation)
    if len(session.results) < len(session.pending):
        return None
    order = {p.call_id: i for i, p in enumerate(session.pending)}
    results = sorted(session.results, key=lambda r: order[r.call_id])
    session.pending = []
    session.results = []
    return await session.brain.send(ToolResults(results))
