"""Provision a Dialogflow CX agent for a τ-bench domain: function tools + a playbook.

Idempotent: it lists what the agent has, creates what is missing and updates only the
fields that differ (with an update mask), so a second run changes nothing. The playbook
is the agent's start playbook unless a display name is given, in which case that
playbook is created or updated; its guidelines are the domain policy and its steps
reference every tool as `${TOOL: name}`. With `dry_run` nothing is written: the plan
(the requests that would be sent) is returned for printing.

A named playbook is wired in, or no session would ever run it (`wire`):

* `reference` (default): the start playbook gets one more instruction step handing every
  request over to `${PLAYBOOK: name}`; its own guidelines and steps are kept. This works
  on any agent: the v3beta1 reference says `Agent.start_playbook` currently accepts only
  the default playbook.
* `start`: UpdateAgent points `start_playbook` at the named playbook (where the service
  accepts it, e.g. the emulator).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from adapters.dialogflow.clients import Clients
from adapters.dialogflow.config import DialogflowConfig
from adapters.dialogflow.retry import RetryPolicy, call_with_retries
from adapters.dialogflow.structs import message_to_dict
from adapters.dialogflow.toolspec import function_of, tool_message
from tau_adapters.jsonsafe import printable
from tau_adapters.protocol import AdapterProtocolError, AdapterTimeoutError

TOOL_FIELDS = ("description", "function_spec")
PLAYBOOK_FIELDS = ("display_name", "goal", "instruction", "referenced_tools")
WIRINGS = ("reference", "start")
DEFAULT_WIRING = "reference"
MAX_LIST_PAGES = 1000  # pages of one listing: far beyond any agent's tools or playbooks


@dataclass
class Step:
    """One provisioning action and the request it sends (or would send)."""

    action: str  # create_tool | update_tool | create_playbook | update_playbook | update_agent
    target: str
    request: dict[str, Any]
    fields: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action, "target": self.target}
        if self.fields:
            out["fields"] = self.fields
        out["request"] = self.request
        return out


@dataclass
class Report:
    steps: list[Step] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    dry_run: bool = False
    wiring: str = ""  # how sessions reach the provisioned playbook, one sentence

    @property
    def changed(self) -> bool:
        return bool(self.steps)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "changes": [s.to_dict() for s in self.steps],
            "unchanged": self.unchanged,
            "wiring": self.wiring,
        }


def playbook_goal(env: str) -> str:
    return (
        f"Act as the {env} customer service agent of the τ-bench benchmark: help the user "
        "with their request, following the policy and using the tools."
    )


def playbook_instruction(policy: str, schemas: Sequence[Mapping[str, Any]]) -> Any:
    """Guidelines = the domain policy; steps reference each tool as `${TOOL: name}`."""
    from google.cloud import dialogflowcx_v3beta1 as cx

    tool_steps = [
        cx.Playbook.Step(
            text=f"${{TOOL: {fn['name']}}} {str(fn.get('description') or '').strip()}".strip()
        )
        for fn in (function_of(s) for s in schemas)
    ]
    steps = [
        cx.Playbook.Step(text="Follow the policy in the guidelines for every request."),
        cx.Playbook.Step(
            text="Look information up with the tools instead of guessing; use these tools:",
            steps=tool_steps,
        ),
        cx.Playbook.Step(text="Reply to the user in plain text, one step at a time."),
    ]
    return cx.Playbook.Instruction(guidelines=policy.strip(), steps=steps)


def playbook_token(display_name: str) -> str:
    """How an instruction step names another playbook (as `${TOOL: name}` names a tool)."""
    return f"${{PLAYBOOK: {display_name}}}"


def _mentions(steps: Sequence[Any], token: str) -> bool:
    return any(token in step.text or _mentions(step.steps, token) for step in steps)


def with_reference(instruction: Any, display_name: str) -> Any | None:
    """`instruction` plus a step handing over to playbook `display_name`; None when one of
    its steps (at any depth) already names that playbook."""
    from google.cloud import dialogflowcx_v3beta1 as cx

    token = playbook_token(display_name)
    if _mentions(instruction.steps, token):
        return None
    updated = cx.Playbook.Instruction.deserialize(cx.Playbook.Instruction.serialize(instruction))
    updated.steps.append(cx.Playbook.Step(text=f"Hand every customer request over to {token}."))
    return updated


def _differing(current: Any, desired: Any, names: tuple[str, ...]) -> list[str]:
    """Fields of `desired` whose value differs from `current` (protobuf equality)."""
    cur, des = type(current).pb(current), type(desired).pb(desired)
    return [name for name in names if getattr(cur, name) != getattr(des, name)]


class Provisioner:
    """Brings one agent in line with one domain (see module doc)."""

    def __init__(
        self,
        clients: Clients,
        config: DialogflowConfig,
        *,
        policy: RetryPolicy | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.clients = clients
        self.config = config
        self.policy = policy or RetryPolicy(
            max_attempts=config.max_attempts, initial=config.retry_initial, maximum=config.retry_max
        )
        say = log or (lambda _msg: None)
        # Names come from the service: control characters are escaped before any log line.
        self.log: Callable[[str], None] = lambda msg: say(printable(msg))

    async def _rpc(self, what: str, method: Callable[..., Any], request: Any) -> Any:
        """One call with the adapter's retry rules (the library's own retry is off)."""

        async def attempt() -> Any:
            return await method(request=request, retry=None, timeout=self.config.timeout)

        return await call_with_retries(attempt, self.policy, what=what)

    async def _list(self, kind: str) -> list[Any]:
        """Every tool or playbook of the agent, all pages: at most `MAX_LIST_PAGES` pages
        within `call_deadline` in all (a service that always answers with a next page
        token would otherwise be listed forever)."""
        what = "ListTools" if kind == "tools" else "ListPlaybooks"
        deadline = self.config.call_deadline
        try:
            async with asyncio.timeout(deadline):
                return await self._pages(kind)
        except TimeoutError:
            raise AdapterTimeoutError(
                f"dialogflow {what}: the listing did not end within {deadline:g} s (call_deadline)"
            ) from None

    async def _pages(self, kind: str) -> list[Any]:
        from google.cloud import dialogflowcx_v3beta1 as cx

        items: list[Any] = []
        token = ""
        for _ in range(MAX_LIST_PAGES):
            if kind == "tools":
                request: Any = cx.ListToolsRequest(parent=self.config.agent_name, page_token=token)
                page = await self._rpc("ListTools", self.clients.tools.list_tools, request)
                items.extend(page.tools)
            else:
                request = cx.ListPlaybooksRequest(parent=self.config.agent_name, page_token=token)
                page = await self._rpc(
                    "ListPlaybooks", self.clients.playbooks.list_playbooks, request
                )
                items.extend(page.playbooks)
            token = page.next_page_token
            if not token:
                return items
        what = "ListTools" if kind == "tools" else "ListPlaybooks"
        raise AdapterProtocolError(
            f"dialogflow {what}: still a next page after {MAX_LIST_PAGES} pages; "
            "the service keeps paginating"
        )

    async def run(
        self,
        env: str,
        schemas: Sequence[Mapping[str, Any]],
        policy_text: str,
        *,
        playbook_name: str | None = None,
        wire: str = DEFAULT_WIRING,
        dry_run: bool = False,
    ) -> Report:
        from google.cloud import dialogflowcx_v3beta1 as cx

        if wire not in WIRINGS:
            raise ValueError(f"wire must be one of {', '.join(WIRINGS)}, not {wire!r}")
        report = Report(dry_run=dry_run)
        agent = await self._rpc(
            "GetAgent",
            self.clients.agents.get_agent,
            cx.GetAgentRequest(name=self.config.agent_name),
        )
        existing = {t.display_name: t for t in await self._list("tools")}
        tool_names: list[str] = []
        for schema in schemas:
            desired = tool_message(schema)
            current = existing.get(desired.display_name)
            if current is None:
                request = cx.CreateToolRequest(parent=self.config.agent_name, tool=desired)
                report.steps.append(
                    Step("create_tool", desired.display_name, message_to_dict(request))
                )
                if dry_run:
                    tool_names.append(f"<new tool {desired.display_name}>")
                    continue
                created = await self._rpc("CreateTool", self.clients.tools.create_tool, request)
                self.log(f"created tool {desired.display_name}")
                tool_names.append(created.name)
                continue
            tool_names.append(current.name)
            fields = _differing(current, desired, TOOL_FIELDS)
            if not fields:
                report.unchanged.append(f"tool {desired.display_name}")
                continue
            desired.name = current.name
            request = cx.UpdateToolRequest(tool=desired, update_mask={"paths": fields})
            report.steps.append(
                Step("update_tool", desired.display_name, message_to_dict(request), fields)
            )
            if not dry_run:
                await self._rpc("UpdateTool", self.clients.tools.update_tool, request)
                self.log(f"updated tool {desired.display_name} ({', '.join(fields)})")
        target, playbooks = await self._playbook(
            report, agent, env, schemas, policy_text, tool_names, playbook_name
        )
        if playbook_name:
            await self._wire(report, agent, playbooks, target, playbook_name, wire)
        else:
            report.wiring = "the agent's start playbook was provisioned in place"
        return report

    async def _playbook(
        self,
        report: Report,
        agent: Any,
        env: str,
        schemas: Sequence[Mapping[str, Any]],
        policy_text: str,
        tool_names: list[str],
        playbook_name: str | None,
    ) -> tuple[str, list[Any]]:
        """Create or update the playbook; its resource name (a placeholder in a dry run
        that would create it) and the agent's playbooks as listed before."""
        from google.cloud import dialogflowcx_v3beta1 as cx

        playbooks = await self._list("playbooks")
        if playbook_name:
            current = next((p for p in playbooks if p.display_name == playbook_name), None)
        else:
            current = next((p for p in playbooks if p.name == agent.start_playbook), None)
            if current is None:
                raise ValueError(
                    f"agent {self.config.agent_name} has no start playbook; "
                    "pass --playbook-name to create one"
                )
        desired = cx.Playbook(
            display_name=playbook_name or (current.display_name if current is not None else ""),
            goal=playbook_goal(env),
            instruction=playbook_instruction(policy_text, schemas),
            referenced_tools=sorted(tool_names),
        )
        if current is None:
            request = cx.CreatePlaybookRequest(parent=self.config.agent_name, playbook=desired)
            report.steps.append(
                Step("create_playbook", desired.display_name, message_to_dict(request))
            )
            if report.dry_run:
                return f"<new playbook {desired.display_name}>", playbooks
            created = await self._rpc(
                "CreatePlaybook", self.clients.playbooks.create_playbook, request
            )
            self.log(f"created playbook {desired.display_name}")
            return str(created.name), playbooks
        fields = _differing(current, desired, PLAYBOOK_FIELDS)
        if not fields:
            report.unchanged.append(f"playbook {current.display_name}")
            return str(current.name), playbooks
        desired.name = current.name
        request = cx.UpdatePlaybookRequest(playbook=desired, update_mask={"paths": fields})
        report.steps.append(
            Step("update_playbook", current.display_name, message_to_dict(request), fields)
        )
        if not report.dry_run:
            await self._rpc("UpdatePlaybook", self.clients.playbooks.update_playbook, request)
            self.log(f"updated playbook {current.display_name} ({', '.join(fields)})")
        return str(current.name), playbooks

    async def _wire(
        self,
        report: Report,
        agent: Any,
        playbooks: list[Any],
        target: str,
        display_name: str,
        wire: str,
    ) -> None:
        """Make sessions reach playbook `target` (see module doc); nothing when they do."""
        from google.cloud import dialogflowcx_v3beta1 as cx

        would = "would be" if report.dry_run else "is"
        if target == agent.start_playbook:
            report.wiring = f"playbook {display_name!r} is the agent's start playbook"
            return
        if wire == "start":
            request: Any = cx.UpdateAgentRequest(
                agent=cx.Agent(name=agent.name, start_playbook=target),
                update_mask={"paths": ["start_playbook"]},
            )
            report.steps.append(Step("update_agent", agent.name, message_to_dict(request)))
            report.wiring = f"playbook {display_name!r} {would} the agent's start playbook"
            if not report.dry_run:
                await self._rpc("UpdateAgent", self.clients.agents.update_agent, request)
                self.log(f"made playbook {display_name} the start playbook")
            return
        start = next((p for p in playbooks if p.name == agent.start_playbook), None)
        if start is None:
            raise ValueError(
                f"agent {self.config.agent_name} has no start playbook to reference "
                f"{display_name!r} from; pass --wire start"
            )
        report.wiring = (
            f"playbook {display_name!r} {would} referenced from the start playbook "
            f"{start.display_name!r}"
        )
        instruction = with_reference(start.instruction, display_name)
        if instruction is None:
            report.unchanged.append(f"reference to {display_name} in {start.display_name}")
            return
        request = cx.UpdatePlaybookRequest(
            playbook=cx.Playbook(name=start.name, instruction=instruction),
            update_mask={"paths": ["instruction"]},
        )
        report.steps.append(
            Step("update_playbook", start.display_name, message_to_dict(request), ["instruction"])
        )
        if not report.dry_run:
            await self._rpc("UpdatePlaybook", self.clients.playbooks.update_playbook, request)
            self.log(f"referenced playbook {display_name} from {start.display_name}")
