"""`--agent-strategy a2a`: talk to an A2A agent, run its tool calls on the local DB.

One context id per episode; a task stays open while the agent waits for input
(`input-required`) and the next message continues it. Tool calls come back as
DataParts of the client-tools extension (`convention.py`) or, in text mode, as the τ³
experiment's `<json>` actions (`textmode.py`).
"""

from __future__ import annotations

import string
import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from adapters.a2a.options import Options
from tau_adapters.protocol import (
    AdapterConfigError,
    AdapterProtocolError,
    AgentInput,
    AgentTurn,
    SessionContext,
    ToolCall,
    ToolResults,
    UserTurn,
)
from tau_adapters.redaction import Redactor, mask_values
from tau_adapters.registry import AgentProvider


def parse_options(options: Mapping[str, Any]) -> Options:
    """Validate the run's flat options (a nested `agent_options` wins) into `Options`."""
    merged = {k: v for k, v in options.items() if k != "agent_options"}
    nested = options.get("agent_options")
    if isinstance(nested, Mapping):
        merged.update({str(k).replace("-", "_"): v for k, v in nested.items()})
    merged = {k: v for k, v in merged.items() if k in Options.model_fields and v is not None}
    try:
        return Options.model_validate(merged)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "options"
        if first["type"] == "missing":
            field = Options.model_fields.get(key)
            extra = field.json_schema_extra if field is not None else None
            flags = extra.get("flags") if isinstance(extra, dict) else None
            flag = (
                str(flags[0]) if isinstance(flags, list) and flags else "--" + key.replace("_", "-")
            )
            raise AdapterConfigError(f"a2a: missing {key}: pass {flag} URL") from None
        message = str(first["msg"]).removeprefix("Value error, ")
        raise AdapterConfigError(f"a2a: bad {key}: {message}") from None


class A2AProvider:
    """Built once per run: one connection (HTTP client, card, A2A client) for all episodes."""

    def __init__(self, options: Options) -> None:
        from adapters.a2a.client import Connection

        self.options = options
        self.connection = Connection(options)
        self.redactor = Redactor(self.connection.secrets)

    @property
    def secrets(self) -> list[str]:
        """The token and API key: masked (`***`) wherever they reappear, e.g. echoed back
        by the agent. The adapter masks its own turns and errors; the runner masks every
        episode record with these too (`tau_adapters.registry.AgentProvider`)."""
        return self.redactor.secrets

    def new_adapter(self) -> A2AAdapter:
        return A2AAdapter(self)

    async def tool_mode(self) -> str:
        """The tool convention in force: `auto` resolved against the card."""
        from adapters.a2a.convention import EXTENSION_URI

        card = await self.connection.card()
        declared = any(e.uri == EXTENSION_URI for e in card.capabilities.extensions)
        mode = self.options.tool_mode
        if mode == "auto":
            return "extension" if declared else "none"
        if mode == "extension" and not declared:
            raise AdapterConfigError(
                f"a2a: tool_mode=extension but the agent card does not declare {EXTENSION_URI}"
            )
        return mode

    async def preflight(self) -> None:
        """Card, tool mode and auth checked with real calls (one line on failure)."""
        await self.tool_mode()
        await self.connection.probe_auth()

    async def aclose(self) -> None:
        await self.connection.aclose()


class A2AAdapter:
    """One conversation (A2A context) with the agent."""

    def __init__(self, provider: A2AProvider) -> None:
        from adapters.a2a.turns import id_factory

        self._provider = provider
        self._session: SessionContext | None = None
        self._mode = "none"
        self._context_id = ""
        self._task_id: str | None = None
        self._first = True
        self._pending: list[ToolCall] = []
        self._seen_artifacts: set[str] = set()
        self._new_id = id_factory()
        self._closed = False

    async def start(self, session: SessionContext) -> None:
        self._session = session
        self._mode = await self._provider.tool_mode()
        self._context_id = str(uuid.uuid4())
        self._task_id = None
        self._first = True
        self._pending = []

    def _metadata(self, session: SessionContext) -> dict[str, str]:
        opts = self._provider.options
        split = session.metadata.get("task_split") or opts.task_split
        values = {
            "task_id": "" if session.task_id is None else session.task_id,
            "user_id": session.user_id or "",
            "trial": session.trial,
            "session_id": session.session_id,
            "env": session.domain,
            "task_split": split,
        }
        formatter = string.Formatter()
        return {k: formatter.vformat(t, (), values) for k, t in opts.metadata_pairs()}

    def _message(self, turn: AgentInput) -> Any:
        from a2a.helpers import new_data_part, new_text_part
        from a2a.types.a2a_pb2 import Message, Role

        from adapters.a2a import convention, textmode

        session = self._session
        if session is None:
            raise AdapterProtocolError("a2a: send before start")
        parts = []
        if isinstance(turn, UserTurn):
            if self._first and self._mode == "text":
                parts.append(
                    new_text_part(textmode.first_message(session.policy, session.tools, turn.text))
                )
            else:
                parts.append(new_text_part(turn.text))
            if self._first and self._mode == "extension":
                policy = session.policy if self._provider.options.send_policy else None
                payload = convention.tool_schemas_payload(session.tools, policy)
                parts.append(new_data_part(payload, media_type="application/json"))
        else:
            names = {c.id: c.name for c in self._pending}
            results = [r for r in turn.results if r.call_id in names]
            if not results:
                raise AdapterProtocolError("a2a: tool results for calls the agent did not make")
            if self._mode == "text":
                pairs = [(names[r.call_id], r.content) for r in results]
                parts.append(new_text_part(textmode.observation_text(pairs)))
            else:
                for r in results:
                    payload = convention.tool_result_payload(
                        r.call_id, names[r.call_id], r.content, r.is_error
                    )
                    parts.append(new_data_part(payload, media_type="application/json"))
        message = Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            context_id=self._context_id,
            parts=parts,
        )
        if self._task_id:
            message.task_id = self._task_id
        if self._mode == "extension":
            message.extensions.append(convention.EXTENSION_URI)
        if self._first:
            metadata = self._metadata(session)
            if metadata:
                message.metadata.update(metadata)
        return message

    async def send(self, turn: AgentInput) -> AgentTurn:
        from a2a.types.a2a_pb2 import TaskState

        from adapters.a2a.convention import EXTENSION_URI
        from adapters.a2a.turns import collect, to_turn

        if self._session is None or self._closed:
            raise AdapterProtocolError("a2a: send on an adapter that is not started")
        if not isinstance(turn, UserTurn | ToolResults):
            raise AdapterProtocolError(f"a2a: cannot send {type(turn).__name__}")
        message = self._message(turn)
        extensions = [EXTENSION_URI] if self._mode == "extension" else []
        exchange = await self._provider.connection.send(message, extensions)
        self._first = False
        reply = collect(exchange.events, self._seen_artifacts)
        redactor = self._provider.redactor
        result = to_turn(
            reply,
            mode=self._mode,
            tools=self._session.tools,
            new_id=self._new_id,
            redact=redactor.text,
        )
        waiting = reply.state in (
            TaskState.TASK_STATE_INPUT_REQUIRED,
            TaskState.TASK_STATE_AUTH_REQUIRED,
        )
        self._task_id = reply.task_id if waiting else None
        self._pending = list(result.tool_calls)
        extra: dict[str, Any] = {
            "context_id": self._context_id,
            "task_id": reply.task_id,
            "task_state": reply.state_name,
            "attempts": exchange.attempts,
        }
        if exchange.retries:
            extra["retries"] = exchange.retries
        if exchange.polls:
            extra["polls"] = exchange.polls
        result.raw = [mask_values(_record(message, exchange), redactor.secrets)]
        result.extra = mask_values(extra, redactor.secrets)
        return result

    async def close(self) -> None:
        self._closed = True
        self._pending = []


def _record(message: Any, exchange: Any) -> dict[str, Any]:
    """The request and the events, as JSON (task histories left out: they repeat)."""
    from google.protobuf import json_format

    events = []
    for event in exchange.events:
        data = json_format.MessageToDict(event)
        data.get("task", {}).pop("history", None)
        events.append(data)
    return {
        "request": json_format.MessageToDict(message),
        "events": events,
        "latency": exchange.latency,
        "attempts": exchange.attempts,
    }


def build(options: Mapping[str, Any]) -> AgentProvider:
    """The run's provider: options validated now, the agent reached on first use."""
    return A2AProvider(parse_options(options))


build.options_model = Options  # type: ignore[attr-defined]
