"""The emulator's resources: apps, their agents and tools, held in memory.

With `auto_apps` (the default for `tau ces emulate`) any app name exists on first use,
with one client-function tool per domain tool and a root agent, so the adapter works
against a fresh emulator; without it (an empty project, for provisioning) apps exist
only after CreateApp and anything else is NOT_FOUND. Names end in opaque ids, as on the
service, so clients must map tool resources to function names (ListTools).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_APP = re.compile(r"^projects/[^/]+/locations/[^/]+/apps/[^/]+$")


class StoreError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class AppRecord:
    app: Any
    agents: dict[str, Any] = field(default_factory=dict)
    tools: dict[str, Any] = field(default_factory=dict)

    def tool_for_function(self, name: str) -> Any | None:
        return next(
            (t for t in self.tools.values() if t.client_function.name == name),
            None,
        )


def _new_id() -> str:
    return uuid.uuid4().hex[:12]


class Store:
    def __init__(
        self, seed_tools: Callable[[], Sequence[Any]] | None = None, *, auto_apps: bool = True
    ) -> None:
        self.apps: dict[str, AppRecord] = {}
        self.seed_tools = seed_tools
        self.auto_apps = auto_apps

    # Apps ----------------------------------------------------------------------------------
    def app(self, name: str) -> AppRecord:
        if not _APP.match(name or ""):
            raise StoreError("INVALID_ARGUMENT", f"malformed app name {name!r}")
        record = self.apps.get(name)
        if record is None:
            if not self.auto_apps:
                raise StoreError("NOT_FOUND", f"app {name} not found")
            record = self._seed(name)
        return record

    def _seed(self, name: str) -> AppRecord:
        from google.cloud import ces_v1

        record = AppRecord(ces_v1.App(name=name, display_name=name.rsplit("/", 1)[-1]))
        self.apps[name] = record
        tools = [self.create_tool(name, t).name for t in (self.seed_tools or (lambda: ()))()]
        agent = self.create_agent(name, ces_v1.Agent(display_name="root", tools=tools))
        record.app.root_agent = agent.name
        return record

    def create_app(self, parent: str, app: Any, app_id: str) -> Any:
        name = f"{parent}/apps/{app_id or _new_id()}"
        if name in self.apps:
            raise StoreError("ALREADY_EXISTS", f"app {name} already exists")
        if not _APP.match(name):
            raise StoreError("INVALID_ARGUMENT", f"malformed app name {name!r}")
        stored = type(app)(app)
        stored.name = name
        self.apps[name] = AppRecord(stored)
        return stored

    # Children ------------------------------------------------------------------------------
    def create_agent(self, parent: str, agent: Any, agent_id: str = "") -> Any:
        record = self.app(parent)
        if not agent.display_name:
            raise StoreError("INVALID_ARGUMENT", "agent.display_name is required")
        if any(a.display_name == agent.display_name for a in record.agents.values()):
            raise StoreError("ALREADY_EXISTS", f"agent {agent.display_name!r} already exists")
        for tool in agent.tools:
            if tool not in record.tools:
                raise StoreError("INVALID_ARGUMENT", f"agent references unknown tool {tool}")
        stored = type(agent)(agent)
        stored.name = f"{parent}/agents/{agent_id or _new_id()}"
        record.agents[stored.name] = stored
        return stored

    def create_tool(self, parent: str, tool: Any, tool_id: str = "") -> Any:
        record = self.app(parent)
        if "client_function" not in tool or not tool.client_function.name:
            raise StoreError("INVALID_ARGUMENT", "the emulator stores client_function tools only")
        if record.tool_for_function(tool.client_function.name) is not None:
            raise StoreError("ALREADY_EXISTS", f"tool {tool.client_function.name!r} already exists")
        stored = type(tool)(tool)
        stored.name = f"{parent}/tools/{tool_id or _new_id()}"
        stored.display_name = tool.client_function.name  # output only, derived
        record.tools[stored.name] = stored
        return stored

    def _parent(self, name: str, kind: str) -> AppRecord:
        parent, sep, _ = (name or "").rpartition(f"/{kind}/")
        if not sep:
            raise StoreError("INVALID_ARGUMENT", f"malformed {kind[:-1]} name {name!r}")
        return self.app(parent)

    def _table(self, kind: str, record: AppRecord) -> dict[str, Any]:
        return record.agents if kind == "agents" else record.tools

    def get(self, kind: str, name: str) -> Any:
        found = self._table(kind, self._parent(name, kind)).get(name)
        if found is None:
            raise StoreError("NOT_FOUND", f"{kind[:-1]} {name} not found")
        return found

    def delete(self, kind: str, name: str) -> None:
        self.get(kind, name)
        del self._table(kind, self._parent(name, kind))[name]

    def update(self, kind: str, message: Any, paths: Sequence[str]) -> Any:
        """Apply the fields named by the update mask (top-level fields) to the stored copy."""
        current = self.app(message.name).app if kind == "apps" else self.get(kind, message.name)
        if not paths:
            raise StoreError("INVALID_ARGUMENT", "update_mask is required")
        desc = type(current).pb(current).DESCRIPTOR
        for path in paths:
            if path in ("name", "create_time", "update_time", "etag") or path not in (
                desc.fields_by_name
            ):
                raise StoreError("INVALID_ARGUMENT", f"cannot update field {path!r}")
        current_pb, new_pb = type(current).pb(current), type(message).pb(message)
        for path in paths:
            current_pb.ClearField(path)
            fd = desc.fields_by_name[path]
            if fd.is_repeated:
                getattr(current_pb, path).extend(getattr(new_pb, path))
            elif fd.message_type is not None:
                if new_pb.HasField(path):
                    getattr(current_pb, path).CopyFrom(getattr(new_pb, path))
            else:
                setattr(current_pb, path, getattr(new_pb, path))
        if kind == "tools":
            current.display_name = current.client_function.name
        return current

    def listing(self, kind: str, parent: str) -> list[Any]:
        if kind == "apps":
            return [r.app for n, r in sorted(self.apps.items()) if n.startswith(parent + "/")]
        return list(self._table(kind, self.app(parent)).values())

    def page(self, kind: str, parent: str, size: int, token: str) -> tuple[list[Any], str]:
        items = self.listing(kind, parent)
        try:
            start = int(token) if token else 0
        except ValueError:
            raise StoreError("INVALID_ARGUMENT", f"bad page_token {token!r}") from None
        end = start + size
        return items[start:end], (str(end) if end < len(items) else "")


def seed_from_schemas(
    schemas: Sequence[Mapping[str, Any]], tool_message: Callable[[Mapping[str, Any]], Any]
) -> Callable[[], list[Any]]:
    """A `seed_tools` callable: one client-function tool per OpenAI-style schema."""
    return lambda: [tool_message(s) for s in schemas]
