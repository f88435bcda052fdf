"""Read what the agent answered (events of one message) as an `AgentTurn`.

The turn's content is the final status message of the task plus the artifacts it
produced during this message (or a direct `Message` reply). Task states decide the rest:
`input-required` is a normal turn; `completed` without a tool call ends the conversation;
`failed`, `canceled`, `rejected` are typed agent errors; `auth-required` is an auth error.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from a2a.types.a2a_pb2 import Part, StreamResponse, TaskState
from google.protobuf import json_format

from adapters.a2a import textmode
from adapters.a2a.convention import TOOL_CALL, ConventionError, kind_of, parse_tool_call
from adapters.a2a.errors import A2ATaskCanceled, A2ATaskError, A2ATaskRejected
from tau_adapters.jsonsafe import printable
from tau_adapters.protocol import AdapterAuthError, AdapterProtocolError, AgentTurn, ToolCall
from tau_adapters.schema_values import parameters_of, restore_ints

_FAILED: dict[int, type[A2ATaskError]] = {
    TaskState.TASK_STATE_FAILED: A2ATaskError,
    TaskState.TASK_STATE_CANCELED: A2ATaskCanceled,
    TaskState.TASK_STATE_REJECTED: A2ATaskRejected,
}


@dataclass
class Reply:
    """The content and final state of one exchange (state None: a direct Message)."""

    state: int | None = None
    task_id: str | None = None
    parts: list[Part] = field(default_factory=list)

    @property
    def state_name(self) -> str:
        if self.state is None:
            return "message"
        return TaskState.Name(self.state).removeprefix("TASK_STATE_").lower().replace("_", "-")


def collect(events: list[StreamResponse], seen_artifacts: set[str]) -> Reply:
    """Fold a stream (or one response, or polls) into a `Reply`; marks artifacts seen."""
    reply = Reply()
    status_parts: list[Part] = []
    artifacts: dict[str, list[Part]] = {}
    for event in events:
        kind = event.WhichOneof("payload")
        if kind == "message":
            return Reply(state=None, task_id=None, parts=list(event.message.parts))
        if kind == "task":
            task = event.task
            reply.task_id, reply.state = task.id, task.status.state
            status_parts = list(task.status.message.parts)
            for artifact in task.artifacts:
                if artifact.artifact_id not in seen_artifacts:
                    artifacts[artifact.artifact_id] = list(artifact.parts)
        elif kind == "status_update":
            update = event.status_update
            reply.task_id, reply.state = update.task_id, update.status.state
            status_parts = list(update.status.message.parts)
        elif kind == "artifact_update":
            artifact = event.artifact_update.artifact
            if artifact.artifact_id in seen_artifacts:
                continue
            if event.artifact_update.append:
                artifacts.setdefault(artifact.artifact_id, []).extend(artifact.parts)
            else:
                artifacts[artifact.artifact_id] = list(artifact.parts)
        else:
            raise AdapterProtocolError("a2a: the agent sent an empty stream event")
    seen_artifacts.update(artifacts)
    reply.parts = [p for parts in artifacts.values() for p in parts] + status_parts
    return reply


def _data(part: Part) -> Any:
    return json_format.MessageToDict(part.data)


def _texts_and_calls(reply: Reply) -> tuple[list[str], list[dict[str, Any]]]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in reply.parts:
        content = part.WhichOneof("content")
        if content is None:
            raise AdapterProtocolError(
                "a2a: the agent sent a part with no text, data, raw or url content"
            )
        if content == "text":
            if part.text.strip():
                texts.append(part.text)
        elif content == "data":
            data = _data(part)
            if kind_of(data) == TOOL_CALL:
                calls.append(data)
    return texts, calls


def to_turn(
    reply: Reply,
    *,
    mode: str,
    tools: list[dict[str, Any]],
    new_id: Callable[[], str],
    redact: Callable[[str], str] = lambda text: text,
) -> AgentTurn:
    """The `AgentTurn` of `reply` (raises typed errors for failed/canceled/auth states).

    `redact` masks the run's secrets (an agent may echo its token back); every text the
    agent wrote that ends up in a message or an error is masked and has its control
    characters escaped."""
    texts, data_calls = _texts_and_calls(reply)
    said = printable(redact(" ".join(texts)))[:300]
    if reply.state in _FAILED:
        error = _FAILED[reply.state]
        raise error(f"a2a: the agent's task ended {reply.state_name}: {said or '(no message)'}")
    if reply.state == TaskState.TASK_STATE_AUTH_REQUIRED:
        raise AdapterAuthError(f"a2a: the agent asked for authentication: {said or '(no message)'}")
    messages: list[str] = []
    calls: list[ToolCall] = []
    try:
        for data in data_calls:
            call_id, name, arguments = parse_tool_call(data)
            calls.append(ToolCall(call_id, name, arguments, raw=data))
        if mode == "text":
            for text in texts:
                actions = textmode.parse_reply(text)
                messages.extend(actions.messages)
                calls.extend(ToolCall(new_id(), n, a) for n, a in actions.calls)
        else:
            messages.extend(texts)
    except (ConventionError, textmode.TextActionError) as exc:
        raise AdapterProtocolError(
            f"a2a: malformed tool call: {printable(redact(str(exc)))}"
        ) from None
    ids = [c.id for c in calls]
    if len(set(ids)) != len(ids):
        shown = printable(redact(repr(ids)))[:300]
        raise AdapterProtocolError(f"a2a: duplicate tool call ids in one turn: {shown}")
    for call in calls:
        call.arguments = restore_ints(call.arguments, parameters_of(tools, call.name))
    ended = reply.state == TaskState.TASK_STATE_COMPLETED and not calls
    if not messages and not calls and not ended:
        raise AdapterProtocolError(
            f"a2a: the agent's turn ({reply.state_name}) has no text and no tool call"
        )
    return AgentTurn(
        messages=[printable(redact(m)) for m in messages],
        tool_calls=calls,
        end_conversation=ended,
    )


def id_factory(prefix: str = "call") -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"{prefix}_{next(counter)}"
