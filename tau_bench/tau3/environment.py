"""The τ³ environment of one episode: agent toolkit, optional user toolkit (spec §2).

`get_response(call)` executes a tool call and returns a typed `ToolResult`; it never
raises: routing errors, argument errors and tool exceptions become `Error: <text>` with
`error=True`, exactly as the original's tool message. After every successful call (and
every environment function call, and at the end of `set_state`) the domain's `sync` hook
runs. DBs come from the domain's per-process sources, so constructing an environment is
cheap (a copy-on-write view or a deep copy of a small model).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tau_bench.tau3.domain import LoadedDomain
from tau_bench.tau3.messages import Message, ToolCall
from tau_bench.tau3.serialise import to_content
from tau_bench.tau3.store import db_hash, db_merged
from tau_bench.tau3.toolkit import IdSource, Toolkit, exception_text

__all__ = ["Environment", "ReplayMismatch", "ToolResult"]

_MAKE_TOOL_CALL = "Environment.make_tool_call()"
_MAKE_TOOL_CALL_MODULE = "tau2.environment.environment.Environment.make_tool_call()"


@dataclass(frozen=True)
class ToolResult:
    """The tool message for one call: exact `content` string and the `error` flag."""

    content: str
    error: bool
    id: str = ""
    requestor: str = "assistant"

    def to_message(self) -> Message:
        return Message(
            role="tool",
            content=self.content,
            id=self.id,
            requestor=self.requestor,
            error=self.error,
        )


class ReplayMismatch(ValueError):
    """A replayed mutating call returned other content than the recorded tool message."""


_IS_MAPPING: dict[type, bool] = {dict: True}


def _field(obj: Any, name: str, default: Any = None) -> Any:
    # `isinstance(obj, Mapping)` is an ABC check (slow); its answer per type is cached.
    cls = type(obj)
    mapping = _IS_MAPPING.get(cls)
    if mapping is None:
        mapping = _IS_MAPPING[cls] = isinstance(obj, Mapping)
    if mapping:
        return obj.get(name, default)
    return getattr(obj, name, default)


class Environment:
    """One episode's environment over fresh DBs of a loaded domain."""

    def __init__(
        self, domain: LoadedDomain, *, solo_mode: bool = False, deterministic_ids: bool = False
    ) -> None:
        spec = domain.spec
        if solo_mode and not spec.supports_solo:
            raise ValueError(f"{spec.name.capitalize()} domain does not support solo mode")
        self.domain = domain
        self.solo_mode = solo_mode
        self.ids = IdSource(deterministic_ids)
        self.sync_effects = 0
        """Sync-hook runs that (may have) changed state; see `replay_task`'s gold shortcut."""
        self.tools: Toolkit = spec.agent_toolkit(domain.agent_source.fresh(), self.ids)
        self.user_tools: Toolkit | None = None
        if spec.user_toolkit is not None:
            user_db = domain.user_source.fresh() if domain.user_source is not None else None
            self.user_tools = spec.user_toolkit(user_db, self.ids)
        if solo_mode and self.user_tools is not None:
            overlap = set(self.tools.tool_names()) & set(self.user_tools.tool_names())
            if overlap:
                raise ValueError(f"Tool names overlap: {overlap}")
        self.sync()

    @property
    def name(self) -> str:
        return self.domain.name

    # -- state hooks -------------------------------------------------------------------
    def sync(self) -> None:
        """The domain's post-call synchronisation (telecom); a no-op elsewhere."""
        hook = self.domain.spec.sync
        if hook is not None:
            self.sync_effects += 1  # counted first: a hook that raises may have changed state
            if hook(self) is False:  # the hook reports it changed nothing
                self.sync_effects -= 1

    def agent_db_hash(self) -> str | None:
        return db_hash(self.tools.db) if self.tools.db is not None else None

    def user_db_hash(self) -> str | None:
        if self.user_tools is None or self.user_tools.db is None:
            return None
        return db_hash(self.user_tools.db)

    def hashes(self) -> dict[str, str | None]:
        return {"agent_db_hash": self.agent_db_hash(), "user_db_hash": self.user_db_hash()}

    # -- tool calls --------------------------------------------------------------------
    def has_tool(self, name: str) -> bool:
        """True if either toolkit has a tool `name` (history replay skips unknown ones)."""
        kits = (self.tools, self.user_tools)
        return any(k is not None and k.has_tool(name) for k in kits)

    def is_mutating(self, name: str) -> bool:
        for kit in (self.tools, self.user_tools):
            if kit is not None and kit.has_tool(name):
                return kit.mutates_state(name)
        return True

    def tool_kind(self, name: str) -> str | None:
        for kit in (self.tools, self.user_tools):
            if kit is not None and kit.has_tool(name):
                return kit.tool_kind(name).value
        return None

    def make_tool_call(self, name: str, requestor: str, arguments: Mapping[str, Any]) -> Any:
        """Route and run a call, raising what the original raised (no sync)."""
        if "requestor" in arguments:
            raise TypeError(
                f"{_MAKE_TOOL_CALL_MODULE} got multiple values for keyword argument 'requestor'"
            )
        for key in arguments:
            if key in ("self", "tool_name"):
                raise TypeError(f"{_MAKE_TOOL_CALL} got multiple values for argument '{key}'")
        if requestor == "user":
            if self.solo_mode:
                raise ValueError("User tool calls are not allowed in solo mode")
            if self.user_tools is None:
                raise ValueError("User tools not available")
            return self.user_tools.call_tool(name, arguments)
        if requestor == "assistant":
            if self.solo_mode and self.user_tools is not None and self.user_tools.has_tool(name):
                return self.user_tools.call_tool(name, arguments)
            return self.tools.call_tool(name, arguments)
        raise ValueError(f"Invalid requestor: {requestor}")

    def get_response(self, call: ToolCall) -> ToolResult:
        """Execute `call`; the tool message as the original produced it. Never raises."""
        try:
            arguments = call.arguments if call.arguments is not None else {}
            result = self.make_tool_call(call.name, call.requestor, arguments)
            self.sync()
            content, error = to_content(result), False
        except Exception as exc:
            content, error = "Error: " + exception_text(exc), True
        return ToolResult(content=content, error=error, id=call.id, requestor=call.requestor)

    def call(
        self, name: str, arguments: Mapping[str, Any], requestor: str = "assistant"
    ) -> ToolResult:
        """Convenience: `get_response` for a call without an id."""
        return self.get_response(
            ToolCall(id="", name=name, arguments=dict(arguments), requestor=requestor)
        )

    # -- environment functions ---------------------------------------------------------
    def _toolkit(self, env_type: str) -> Toolkit | None:
        if env_type == "user":
            return self.user_tools
        if env_type == "assistant":
            return self.tools
        raise ValueError(f"Invalid environment type: {env_type}")

    def run_env_function_call(self, call: Any) -> Any:
        """Run any toolkit attribute (`{env_type, func_name, arguments}`), then sync; raises."""
        kit = self._toolkit(_field(call, "env_type"))
        name = _field(call, "func_name")
        arguments = _field(call, "arguments") or {}
        if kit is None:
            getattr(kit, name)  # the original's AttributeError on None
        assert kit is not None
        result = kit.call_function(name, arguments)
        self.sync()
        return result

    def run_env_assertion(self, assertion: Any) -> bool:
        """True iff the helper's bool result equals `assert_value` (default true); raises."""
        result = self.run_env_function_call(assertion)
        if not isinstance(result, bool):
            raise ValueError(
                f"Function {_field(assertion, 'func_name')} returned {type(result)} instead of bool"
            )
        expected = _field(assertion, "assert_value", True)
        return bool(result == (True if expected is None else expected))

    # -- initial state -----------------------------------------------------------------
    def set_state(
        self,
        initialization_data: Any,
        initialization_actions: Iterable[Any] | None,
        message_history: list[Message],
        strict: bool = True,
    ) -> None:
        """Apply a task's initial state (spec §2.5): data merge, actions, history replay."""
        if self.solo_mode and any(m.role == "user" for m in message_history):
            raise AssertionError("User messages are not allowed in solo mode")
        pairs = _history_pairs(message_history)
        if initialization_data is not None:
            agent_data = _field(initialization_data, "agent_data")
            user_data = _field(initialization_data, "user_data")
            if agent_data is not None:
                self.tools.db = db_merged(self.tools.db, agent_data)
                if self.user_tools is not None and self.user_tools.db is not None:
                    self.user_tools.db = self.tools.db  # the original's re-pointing quirk
            if user_data is not None:
                if self.user_tools is None:
                    raise AttributeError("'NoneType' object has no attribute 'update_db'")
                self.user_tools.db = db_merged(self.user_tools.db, user_data)
                if self.tools.db is not None:
                    self.tools.db = self.user_tools.db
        for action in initialization_actions or ():
            self.run_env_function_call(action)
        for call, recorded in pairs:
            if not self.has_tool(call.name) or not self.is_mutating(call.name):
                continue
            got = self.get_response(call)
            recorded_content = recorded.content or ""
            if (
                strict
                and got.content != recorded_content  # equal text: equal parse, skip parsing
                and _parsed(got.content) != _parsed(recorded_content)
            ):
                raise ReplayMismatch(
                    f"Tool call:\n{call}\n\nReturned:\n{got.content}\n\n"
                    f"Expected:\n{recorded.content}"
                )
        self.sync()


def _parsed(content: str) -> Any:
    try:
        return json.loads(content)
    except (json.JSONDecodeError, TypeError):
        return content


def _history_pairs(messages: list[Message]) -> list[tuple[ToolCall, Message]]:
    """(call, tool message) pairs of a history; the original's structural checks."""
    pairs: list[tuple[ToolCall, Message]] = []
    i = 0
    while i < len(messages):
        msg = messages[i]
        i += 1
        if msg.role == "tool":
            raise ValueError(
                "Tool message not expected. Tool messages should always follow a tool call."
            )
        if not msg.is_tool_call():
            continue
        for call in msg.tool_calls or ():
            if i >= len(messages):
                raise ValueError("Tool message expected. Got None.")
            tm = messages[i]
            i += 1
            if tm.role != "tool":
                raise ValueError(f"Tool message expected. Got {tm.role}")
            if call.id != tm.id:
                raise ValueError(f"Tool call id mismatch. Got {call.id} and {tm.id}")
            pairs.append((call, tm))
    return pairs
