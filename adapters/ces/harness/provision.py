"""Provision a CES app for a τ-bench domain: client-function tools + an agent.

Idempotent: it reads what the app has, creates what is missing and updates only the
fields that differ (with an update mask), so a second run changes nothing. The app is
created when it does not exist (CreateApp, a long-running operation). One client-function
tool per domain tool (name, description, parameter schema), matched by function name;
one agent (matched by display name) whose instruction is the domain policy and which
uses every tool; it becomes the app's root agent. With `dry_run` nothing is written: the
plan (the requests that would be sent) is returned.

Every wait is bounded: List calls read at most `max_pages` pages, the CreateApp operation
is awaited at most `deadline` seconds; a failed operation is an `AdapterError` with the
service's message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from adapters.ces.clients import Clients
from adapters.ces.harness.toolspec import tool_message
from adapters.ces.options import Options
from adapters.ces.retry import RetryPolicy, call_with_retries, to_adapter_error
from adapters.ces.structs import message_dict
from tau_adapters.protocol import AdapterError

AGENT_FIELDS = ("description", "instruction", "tools")


@dataclass
class Step:
    """One provisioning action and the request it sends (or would send)."""

    action: str
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "changes": [s.to_dict() for s in self.steps],
            "unchanged": self.unchanged,
        }


def _status_name(operation: Any) -> str:
    import grpc

    try:
        number = int(operation.operation.error.code)
    except (AttributeError, TypeError, ValueError):
        return "error"
    return next((c.name for c in grpc.StatusCode if c.value[0] == number), f"code {number}")


def agent_description(env: str) -> str:
    return f"The {env} customer service agent of the τ-bench benchmark (tools run client-side)."


class Provisioner:
    """Brings one app in line with one domain (see module doc)."""

    def __init__(
        self,
        clients: Clients,
        options: Options,
        *,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.clients = clients
        self.options = options
        self.policy = RetryPolicy(
            max_attempts=options.max_attempts,
            initial=options.retry_initial,
            maximum=options.retry_max,
            timeout=options.timeout,
            deadline=options.deadline,
        )
        self.log = log or (lambda _msg: None)

    async def _rpc(self, what: str, method: Callable[..., Any], request: Any) -> Any:
        async def attempt(budget: float) -> Any:
            return await method(request=request, retry=None, timeout=budget)

        return await call_with_retries(attempt, self.policy, what=what)

    async def _list(self, what: str, method: Callable[..., Any], request_cls: Any) -> list[Any]:
        items: list[Any] = []
        token = ""
        for _ in range(self.options.max_pages):
            request = request_cls(parent=self.options.app_name, page_token=token)
            page = await self._rpc(what, method, request)
            items.extend(page.tools if what == "ListTools" else page.agents)
            token = page.next_page_token
            if not token:
                return items
        raise AdapterError(
            f"ces {what}: still more pages after {self.options.max_pages} "
            "(max_pages; the server keeps returning a next_page_token)"
        )

    async def _finish(self, what: str, operation: Any) -> Any:
        """The result of a long-running operation, within `deadline`; AdapterError if it
        failed or did not finish."""
        from google.api_core import exceptions as gexc

        deadline = self.options.deadline
        try:
            async with asyncio.timeout(deadline + 1.0):
                return await operation.result(timeout=deadline)
        except TimeoutError:
            raise AdapterError(
                f"ces {what}: the operation did not finish within {deadline:g} s (deadline)",
                retryable=True,
            ) from None
        except gexc.RetryError as exc:
            raise AdapterError(
                f"ces {what}: the operation did not finish ({exc.message})"
            ) from None
        except gexc.GoogleAPICallError as exc:
            if exc.grpc_status_code is not None:
                raise to_adapter_error(exc, what) from None
            # The operation finished with an error: its google.rpc.Status names the code.
            raise AdapterError(
                f"ces {what}: the operation failed: {_status_name(operation)}: {exc.message}"
            ) from None

    async def _app(self, report: Report, display_name: str) -> Any | None:
        """The app, created if missing (None in a dry run where it does not exist yet)."""
        from google.cloud import ces_v1

        try:
            return await self._rpc(
                "GetApp",
                self.clients.agents.get_app,
                ces_v1.GetAppRequest(name=self.options.app_name),
            )
        except AdapterError as exc:
            if "NOT_FOUND" not in str(exc):
                raise
        parent = self.options.app_name.rsplit("/apps/", 1)[0]
        request = ces_v1.CreateAppRequest(
            parent=parent, app_id=self.options.app_id, app=ces_v1.App(display_name=display_name)
        )
        report.steps.append(Step("create_app", self.options.app_name, message_dict(request)))
        if report.dry_run:
            return None
        operation = await self._rpc("CreateApp", self.clients.agents.create_app, request)
        app = await self._finish("CreateApp", operation)
        self.log(f"created app {app.name}")
        return app

    async def run(
        self,
        env: str,
        schemas: Sequence[Mapping[str, Any]],
        policy_text: str,
        *,
        agent_name: str | None = None,
        dry_run: bool = False,
    ) -> Report:
        from google.cloud import ces_v1

        report = Report(dry_run=dry_run)
        app = await self._app(report, f"τ-bench {env}")
        existing: dict[str, Any] = {}
        agents: list[Any] = []
        if app is not None:
            tools = await self._list(
                "ListTools", self.clients.agents.list_tools, ces_v1.ListToolsRequest
            )
            existing = {t.client_function.name: t for t in tools if "client_function" in t}
            agents = await self._list(
                "ListAgents", self.clients.agents.list_agents, ces_v1.ListAgentsRequest
            )
        tool_names = [await self._tool(report, existing, schema) for schema in schemas]
        display_name = agent_name or f"tau-bench-{env}"
        desired = ces_v1.Agent(
            display_name=display_name,
            description=agent_description(env),
            instruction=policy_text.strip(),
            tools=sorted(tool_names),
        )
        current = next((a for a in agents if a.display_name == display_name), None)
        agent = await self._agent(report, current, desired)
        await self._root(report, app, agent)
        return report

    async def _tool(self, report: Report, existing: dict[str, Any], schema: Any) -> str:
        from google.cloud import ces_v1

        desired = tool_message(schema)
        name = desired.client_function.name
        current = existing.get(name)
        if current is None:
            request = ces_v1.CreateToolRequest(parent=self.options.app_name, tool=desired)
            report.steps.append(Step("create_tool", name, message_dict(request)))
            if report.dry_run:
                return f"<new tool {name}>"
            created = await self._rpc("CreateTool", self.clients.agents.create_tool, request)
            self.log(f"created tool {name}")
            return str(created.name)
        if ces_v1.ClientFunction.pb(current.client_function) == ces_v1.ClientFunction.pb(
            desired.client_function
        ):
            report.unchanged.append(f"tool {name}")
            return str(current.name)
        desired.name = current.name
        request = ces_v1.UpdateToolRequest(tool=desired, update_mask={"paths": ["client_function"]})
        report.steps.append(Step("update_tool", name, message_dict(request), ["client_function"]))
        if not report.dry_run:
            await self._rpc("UpdateTool", self.clients.agents.update_tool, request)
            self.log(f"updated tool {name}")
        return str(current.name)

    async def _agent(self, report: Report, current: Any, desired: Any) -> str:
        from google.cloud import ces_v1

        if current is None:
            desired.llm_agent = ces_v1.Agent.LlmAgent()
            request = ces_v1.CreateAgentRequest(parent=self.options.app_name, agent=desired)
            report.steps.append(Step("create_agent", desired.display_name, message_dict(request)))
            if report.dry_run:
                return f"<new agent {desired.display_name}>"
            created = await self._rpc("CreateAgent", self.clients.agents.create_agent, request)
            self.log(f"created agent {desired.display_name}")
            return str(created.name)
        differing = [
            f
            for f in AGENT_FIELDS
            if (sorted(getattr(current, f)) if f == "tools" else getattr(current, f))
            != (sorted(getattr(desired, f)) if f == "tools" else getattr(desired, f))
        ]
        if not differing:
            report.unchanged.append(f"agent {current.display_name}")
            return str(current.name)
        desired.name = current.name
        request = ces_v1.UpdateAgentRequest(agent=desired, update_mask={"paths": differing})
        report.steps.append(
            Step("update_agent", desired.display_name, message_dict(request), differing)
        )
        if not report.dry_run:
            await self._rpc("UpdateAgent", self.clients.agents.update_agent, request)
            self.log(f"updated agent {desired.display_name} ({', '.join(differing)})")
        return str(current.name)

    async def _root(self, report: Report, app: Any, agent: str) -> None:
        from google.cloud import ces_v1

        if app is not None and app.root_agent == agent:
            report.unchanged.append("app root_agent")
            return
        request = ces_v1.UpdateAppRequest(
            app=ces_v1.App(name=self.options.app_name, root_agent=agent),
            update_mask={"paths": ["root_agent"]},
        )
        report.steps.append(
            Step("update_app", self.options.app_name, message_dict(request), ["root_agent"])
        )
        if not report.dry_run:
            await self._rpc("UpdateApp", self.clients.agents.update_app, request)
            self.log(f"set the root agent of {self.options.app_name}")
