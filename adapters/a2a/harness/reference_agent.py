"""A reference A2A agent (a2a-sdk server side) whose brain is any τ-bench AgentAdapter.

It learns which task it plays from the first message of a conversation (message
metadata `env`, `task_id`, `task_split`: see the adapter's `message_metadata`), and how
tools travel from that message too: a `tool_schemas` DataPart (client-tools extension)
or the text convention. It never shares memory with the harness: everything it knows
arrives over A2A or is loaded from the data directory.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from a2a.helpers import new_data_part, new_message, new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Message, Part, TaskState
from google.protobuf import json_format

from adapters.a2a import convention, textmode
from tau_adapters.protocol import (
    AgentAdapter,
    AgentInput,
    AgentTurn,
    SessionContext,
    ToolResult,
    ToolResults,
    UserTurn,
)
from tau_bench.suites import Domain, load_domain

BrainFactory = Callable[[], AgentAdapter]
MAX_CONVERSATIONS = 10_000


class Refusal(Exception):
    """Why this agent cannot play a conversation (becomes a `failed` task)."""


@dataclass
class Conversation:
    brain: AgentAdapter
    mode: str
    pending: list[tuple[str, str]] = field(default_factory=list)  # (call id, name)


def _data_parts(message: Message) -> list[Any]:
    return [json_format.MessageToDict(p.data) for p in message.parts if p.HasField("data")]


def _text(message: Message) -> str:
    return "\n".join(p.text for p in message.parts if p.HasField("text"))


class ReferenceExecutor(AgentExecutor):
    """Maps A2A messages to brain calls: one brain per context id."""

    def __init__(
        self,
        brain_factory: BrainFactory,
        *,
        env: str | None = None,
        data_dir: str | Path | None = None,
        needs_task: bool = True,
    ) -> None:
        self._brain_factory = brain_factory
        self._env = env
        self._data_dir = data_dir
        self._needs_task = needs_task
        self._domains: dict[str, Domain] = {}
        self._conversations: OrderedDict[str, Conversation] = OrderedDict()
        self._lock = asyncio.Lock()

    def _domain(self, env: str) -> Domain:
        if env not in self._domains:
            self._domains[env] = load_domain(env, self._data_dir)
        return self._domains[env]

    async def _open(self, message: Message, context_id: str) -> tuple[Conversation, AgentInput]:
        meta = json_format.MessageToDict(message.metadata)
        env = str(meta.get("env") or self._env or "")
        if not env:
            raise Refusal("no env: send metadata env=<domain> in the first message")
        if self._env and env != self._env:
            raise Refusal(f"this agent serves env {self._env!r}, not {env!r}")
        try:
            domain = self._domain(env)
        except Exception as exc:
            raise Refusal(f"cannot load env {env!r}: {exc}") from None
        task, task_id = None, meta.get("task_id")
        if task_id not in (None, ""):
            split = str(meta.get("task_split") or domain.default_split)
            try:
                tasks = domain.tasks(split)
                task = tasks[int(str(task_id))]
            except (ValueError, IndexError, LookupError) as exc:
                raise Refusal(f"no task {task_id!r} in {env}/{split}: {exc}") from None
        elif self._needs_task:
            raise Refusal("no task_id: send metadata task_id=<id> in the first message")
        schemas = [
            d for d in _data_parts(message) if convention.kind_of(d) == convention.TOOL_SCHEMAS
        ]
        text = _text(message)
        if schemas:
            mode, tools, first = "extension", list(schemas[0].get("tools") or []), text
        elif (user := textmode.user_text_of_first_message(text)) is not None:
            mode, tools, first = "text", domain.tool_schemas, user
        else:
            raise Refusal(
                "no tools offered: use the client-tools extension "
                f"({convention.EXTENSION_URI}) or the text convention"
            )
        session = SessionContext(
            session_id=context_id,
            domain=env,
            tools=tools,
            policy=domain.policy,
            task_id=task_id,
            user_id=getattr(task, "user_id", None),
            metadata={"terminate_tools": sorted(domain.terminate_tools)},
            task=task,
        )
        brain = self._brain_factory()
        await brain.start(session)
        return Conversation(brain, mode), UserTurn(first)

    def _input(self, conv: Conversation, message: Message) -> AgentInput:
        pending, conv.pending = conv.pending, []
        if conv.mode == "extension":
            names = dict(pending)
            results = []
            for data in _data_parts(message):
                if convention.kind_of(data) == convention.TOOL_RESULT:
                    call_id, content, is_error = convention.parse_tool_result(data)
                    results.append(ToolResult(call_id, names.get(call_id, ""), content, is_error))
            if results:
                return ToolResults(results)
            return UserTurn(_text(message))
        text = _text(message)
        if not pending:
            return UserTurn(text)
        outputs = textmode.split_observations(text, [name for _, name in pending])
        return ToolResults(
            [
                ToolResult(call_id, name, out, out.startswith("Error"))
                for (call_id, name), out in zip(pending, outputs, strict=True)
            ]
        )

    def _reply(self, conv: Conversation, turn: AgentTurn) -> tuple[Any, list[Part]]:
        conv.pending = [(c.id, c.name) for c in turn.tool_calls]
        parts: list[Part] = []
        if conv.mode == "extension":
            parts += [new_text_part(m) for m in turn.messages if m]
            parts += [
                new_data_part(convention.tool_call_payload(c.id, c.name, c.arguments))
                for c in turn.tool_calls
            ]
        else:
            blocks = [
                textmode.action_block(textmode.RESPOND, {"content": m}) for m in turn.messages
            ]
            blocks += [textmode.action_block(c.name, dict(c.arguments)) for c in turn.tool_calls]
            parts.append(new_text_part("\n".join(blocks)))
        ended = turn.end_conversation and not turn.tool_calls
        return (
            TaskState.TASK_STATE_COMPLETED if ended else TaskState.TASK_STATE_INPUT_REQUIRED
        ), parts

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        task_id, context_id = context.task_id or "", context.context_id or ""
        if message is None:
            return
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(message))
        updater = TaskUpdater(event_queue, task_id, context_id)
        try:
            async with self._lock:
                conv = self._conversations.pop(context_id, None)
            if conv is None:
                conv, agent_input = await self._open(message, context_id)
            else:
                agent_input = self._input(conv, message)
            turn = await conv.brain.send(agent_input)
            state, parts = self._reply(conv, turn)
        except Exception as exc:
            reason = str(exc) if isinstance(exc, Refusal) else f"{type(exc).__name__}: {exc}"
            await updater.update_status(
                TaskState.TASK_STATE_FAILED,
                new_message([new_text_part(reason)], context_id, task_id),
            )
            return
        if state == TaskState.TASK_STATE_COMPLETED:
            await conv.brain.close()
        else:
            async with self._lock:
                self._conversations[context_id] = conv
                while len(self._conversations) > MAX_CONVERSATIONS:
                    _, old = self._conversations.popitem(last=False)
                    await old.brain.close()
        await updater.update_status(state, new_message(parts, context_id, task_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        async with self._lock:
            conv = self._conversations.pop(context.context_id or "", None)
        if conv is not None:
            await conv.brain.close()
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()
