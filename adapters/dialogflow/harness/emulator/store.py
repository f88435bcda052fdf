"""The emulator's agents, tools and playbooks, in memory.

Agents spring into existence on first use (any `projects/P/locations/L/agents/A`), each with
a start playbook, as a newly created console agent has. With `preload` tool schemas,
a new agent also gets one function tool per domain tool, so a rehearsal needs no
provisioning step; without it, tools come from CreateTool (e.g. `tau dialogflow provision`).

Playbook wiring is modelled as the service documents it: UpdateAgent may point
`start_playbook` at another playbook of the agent (the live service currently accepts only
the default one; the emulator is permissive so both wirings can be rehearsed), and a
playbook's output-only `referenced_playbooks` is computed from `${PLAYBOOK: display name}`
in its instruction steps. `AgentRecord.active_playbooks` is what a session runs: the start
playbook, then the first playbook it references (the emulator's brain stands for it).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from adapters.dialogflow.toolspec import tool_message

START_PLAYBOOK_ID = "00000000-0000-0000-0000-000000000000"
AGENT_RE = re.compile(r"^(projects/[^/]+/locations/[^/]+/agents/[^/]+)")
PLAYBOOK_REF_RE = re.compile(r"\$\{PLAYBOOK:\s*([^}]*?)\s*\}")
AGENT_FIELDS = ("display_name", "description", "start_playbook")


class StoreError(Exception):
    """A request the store refuses; `code` is a grpc.StatusCode name."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def agent_of(name: str) -> str:
    match = AGENT_RE.match(name or "")
    if not match:
        raise StoreError("INVALID_ARGUMENT", f"not an agent resource name: {name!r}")
    return match.group(1)


def copy_message(message: Any) -> Any:
    cls = type(message)
    return cls.deserialize(cls.serialize(message))


def _step_texts(steps: Iterable[Any]) -> Iterable[str]:
    for step in steps:
        yield step.text
        yield from _step_texts(step.steps)


@dataclass
class AgentRecord:
    name: str
    tools: dict[str, Any] = field(default_factory=dict)
    playbooks: dict[str, Any] = field(default_factory=dict)
    start: str = ""
    display_name: str = "tau-bench emulated agent"
    description: str = ""

    @property
    def default_playbook(self) -> str:
        """The playbook a new agent starts with; it can only go with the agent."""
        return f"{self.name}/playbooks/{START_PLAYBOOK_ID}"

    @property
    def start_playbook(self) -> str:
        return self.start or self.default_playbook

    def active_playbooks(self) -> list[str]:
        """The playbooks a session runs: the start one, then the first it references."""
        start = self.playbooks.get(self.start_playbook)
        referenced = list(start.referenced_playbooks) if start is not None else []
        return [self.start_playbook, *referenced[:1]]

    def resolve_references(self) -> None:
        """Recompute every playbook's output-only `referenced_playbooks` from its steps
        (display names may have changed, so all of them, not just the one written)."""
        by_display = {p.display_name: name for name, p in self.playbooks.items()}
        for name, playbook in self.playbooks.items():
            refs: list[str] = []
            for text in _step_texts(playbook.instruction.steps):
                for display in PLAYBOOK_REF_RE.findall(text):
                    target = by_display.get(display)
                    if target and target != name and target not in refs:
                        refs.append(target)
            playbook.referenced_playbooks = refs

    def tool_for_function(self, function: str) -> str | None:
        for name, tool in self.tools.items():
            if tool.display_name == function and "function_spec" in tool:
                return name
        return None

    def message(self) -> Any:
        from google.cloud import dialogflowcx_v3beta1 as cx

        return cx.Agent(
            name=self.name,
            display_name=self.display_name,
            description=self.description,
            default_language_code="en",
            time_zone="America/New_York",
            start_playbook=self.start_playbook,
        )


class Store:
    def __init__(self, preload: Iterable[Mapping[str, Any]] = ()) -> None:
        self.preload = list(preload)
        self.agents: dict[str, AgentRecord] = {}

    def agent(self, name: str) -> AgentRecord:
        """The agent `name` (or the agent owning resource `name`), created on first use."""
        from google.cloud import dialogflowcx_v3beta1 as cx

        key = agent_of(name)
        record = self.agents.get(key)
        if record is None:
            record = AgentRecord(key)
            start = cx.Playbook(
                name=record.default_playbook,
                display_name="Default Generative Agent",
                goal="Help the customer.",
                playbook_type=cx.Playbook.PlaybookType.TASK,
            )
            record.playbooks[start.name] = start
            for schema in self.preload:
                self._add_tool(record, tool_message(schema))
            self.agents[key] = record
        return record

    def _add_tool(self, record: AgentRecord, tool: Any) -> Any:
        from google.cloud import dialogflowcx_v3beta1 as cx

        stored = copy_message(tool)
        stored.name = f"{record.name}/tools/{uuid.uuid4()}"
        stored.tool_type = cx.Tool.ToolType.CUSTOMIZED_TOOL
        record.tools[stored.name] = stored
        return copy_message(stored)

    # Tools -----------------------------------------------------------------------------
    def create_tool(self, parent: str, tool: Any) -> Any:
        record = self.agent(parent)
        if not tool.display_name:
            raise StoreError("INVALID_ARGUMENT", "tool.display_name is required")
        if any(t.display_name == tool.display_name for t in record.tools.values()):
            raise StoreError("ALREADY_EXISTS", f"a tool named {tool.display_name!r} already exists")
        return self._add_tool(record, tool)

    def get(self, kind: str, name: str) -> Any:
        record = self.agent(name)
        table = record.tools if kind == "tool" else record.playbooks
        if name not in table:
            raise StoreError("NOT_FOUND", f"{kind} {name} not found")
        return copy_message(table[name])

    def update(self, kind: str, message: Any, paths: list[str]) -> Any:
        record = self.agent(message.name)
        table = record.tools if kind == "tool" else record.playbooks
        current = table.get(message.name)
        if current is None:
            raise StoreError("NOT_FOUND", f"{kind} {message.name} not found")
        renamed = message.display_name and message.display_name != current.display_name
        taken = any(m.display_name == message.display_name for m in table.values())
        if renamed and taken and (not paths or "display_name" in paths):
            raise StoreError(
                "ALREADY_EXISTS", f"a {kind} named {message.display_name!r} already exists"
            )
        updated = copy_message(current)
        if paths:
            from google.protobuf import field_mask_pb2

            mask = field_mask_pb2.FieldMask(paths=paths)
            try:
                mask.MergeMessage(
                    type(message).pb(message),
                    type(updated).pb(updated),
                    replace_message_field=True,
                    replace_repeated_field=True,
                )
            except ValueError as exc:
                raise StoreError("INVALID_ARGUMENT", f"bad update_mask: {exc}") from None
        else:
            updated = copy_message(message)
            updated.name = current.name
            if kind == "tool":
                updated.tool_type = current.tool_type
        table[current.name] = updated
        if kind == "playbook":
            record.resolve_references()
        return copy_message(table[current.name])

    def delete(self, kind: str, name: str) -> None:
        record = self.agent(name)
        table = record.tools if kind == "tool" else record.playbooks
        if name not in table:
            raise StoreError("NOT_FOUND", f"{kind} {name} not found")
        if kind == "playbook" and name in (record.start_playbook, record.default_playbook):
            raise StoreError("FAILED_PRECONDITION", "the start playbook cannot be deleted")
        del table[name]
        if kind == "playbook":
            record.resolve_references()

    # Playbooks -------------------------------------------------------------------------
    def create_playbook(self, parent: str, playbook: Any) -> Any:
        record = self.agent(parent)
        if not playbook.display_name:
            raise StoreError("INVALID_ARGUMENT", "playbook.display_name is required")
        if any(p.display_name == playbook.display_name for p in record.playbooks.values()):
            raise StoreError(
                "ALREADY_EXISTS", f"a playbook named {playbook.display_name!r} already exists"
            )
        stored = copy_message(playbook)
        stored.name = f"{record.name}/playbooks/{uuid.uuid4()}"
        record.playbooks[stored.name] = stored
        record.resolve_references()
        return copy_message(stored)

    # Agents ----------------------------------------------------------------------------
    def update_agent(self, agent: Any, paths: list[str]) -> Any:
        """UpdateAgent for the fields the emulator keeps; the start playbook must exist."""
        record = self.agent(agent.name)
        if agent.name != record.name:
            raise StoreError("INVALID_ARGUMENT", f"not an agent resource name: {agent.name!r}")
        fields = paths or list(AGENT_FIELDS)
        unknown = [p for p in fields if p not in AGENT_FIELDS]
        if unknown:
            raise StoreError("INVALID_ARGUMENT", f"the emulator cannot update agent {unknown}")
        if "start_playbook" in fields:
            wanted = agent.start_playbook or record.default_playbook
            if wanted not in record.playbooks:
                raise StoreError("NOT_FOUND", f"playbook {wanted} not found")
            record.start = wanted
        if "display_name" in fields:
            record.display_name = agent.display_name
        if "description" in fields:
            record.description = agent.description
        return record.message()

    def page(self, kind: str, parent: str, size: int, token: str) -> tuple[list[Any], str]:
        """One page of tools or playbooks; the token is the offset of the next page."""
        record = self.agent(parent)
        items = list((record.tools if kind == "tool" else record.playbooks).values())
        try:
            start = int(token) if token else 0
        except ValueError:
            raise StoreError("INVALID_ARGUMENT", f"bad page_token {token!r}") from None
        chunk = items[start : start + size]
        following = start + size
        return [copy_message(m) for m in chunk], str(following) if following < len(items) else ""
