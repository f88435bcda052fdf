"""The CX Agent Studio / Customer Engagement Suite (CES) adapter: a hosted CES app as an
`AgentAdapter`, with the domain's tools as client-side function tools.

One episode is one CES session (`projects/P/locations/L/apps/A/sessions/<episode id>`).
A user turn is a RunSession with a text input (BidiRunSession with `streaming`). The
agent's `tool_calls` outputs are surfaced as `ToolCall`s, the loop runs them on the local
τ-bench database, and the observations go back together in the next request as one
`tool_responses` input: `{"output": "<observation>"}`, or `{"error": "<observation>"}`
for results the loop marks `is_error`. An `end_session` output ends the episode
(`handoff` when its metadata says `session_escalated`).

The provider (`build(options)`) is shared by a run's episodes: clients, the tool-name map
from ListTools, the retry policy, and the secrets to mask (`secrets`: the access tokens
the channels sent, the values of secret-looking session variables), which the adapter
masks in its turns and errors and the runner in every record.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import string
import time
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from adapters.ces.clients import Clients, TokenLog, make_clients
from adapters.ces.options import Options, merged
from adapters.ces.outputs import Parsed, RawCall
from adapters.ces.retry import RetryPolicy, Sleep, call_with_retries
from adapters.ces.structs import to_struct
from adapters.ces.transport import BidiTransport, Exchanged, UnaryTransport
from tau_adapters.protocol import (
    AdapterConfigError,
    AdapterError,
    AdapterProtocolError,
    AgentInput,
    AgentTurn,
    SessionContext,
    ToolCall,
    ToolResults,
    UserTurn,
)
from tau_adapters.redaction import (
    is_secret_key,
    mask_encoded,
    mask_values,
    redact_secrets,
)
from tau_adapters.registry import AgentProvider
from tau_adapters.schema_values import parameters_by_name, restore_ints

NOT_EXECUTED = "Error: tool call not executed (the evaluation harness limits tool calls per turn)"
PAGE_SIZE = 100
MAX_VARIABLE_SECRETS = 1024
_SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{1,36}$")


def session_id_for(session: SessionContext) -> str:
    """The CES session id: the episode's id when it is short and plain, else a hash."""
    sid = str(session.session_id)
    return sid if _SESSION_ID.match(sid) else hashlib.sha256(sid.encode()).hexdigest()[:36]


def load_options(options: Mapping[str, Any]) -> Options:
    """The validated options, or AdapterConfigError naming the first bad key."""
    try:
        return Options.model_validate(merged(options))
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(p) for p in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["type"] == "missing":
            message = f"missing (pass --{key.replace('_', '-')})"
        # Checks across fields name their key at the start of the message themselves.
        raise AdapterConfigError(f"ces: {key}: {message}" if key else f"ces: {message}") from None


class CesProvider:
    """Shared by all episodes of a run: clients, tool names, retry policy."""

    def __init__(self, options: Options, *, sleep: Sleep = asyncio.sleep) -> None:
        self.options = options
        self.display_name = options.app_id.rsplit("/", 1)[-1]  # optional: names the agent
        self.policy = RetryPolicy(
            max_attempts=options.max_attempts,
            initial=options.retry_initial,
            maximum=options.retry_max,
            ambiguous_retries=options.ambiguous_retries,
            timeout=options.timeout,
            deadline=options.deadline,
        )
        self.sleep = sleep
        self.warnings: list[str] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clients: Clients | None = None
        self._lock: asyncio.Lock | None = None
        self._tool_names: dict[str, str] | None = None
        self.tokens = TokenLog()
        self._variable_secrets: list[str] = []

    @property
    def secrets(self) -> list[str]:
        """The access tokens sent so far and the values of secret-looking session
        variables: masked (`***`) wherever they reappear (an agent echoing them). Read
        afresh for every record, so tokens refreshed during the run are masked too."""
        return [*self.tokens.tokens, *self._variable_secrets]

    def learn_secret(self, value: str) -> None:
        """Mask `value` too (a secret session variable's value; per-episode values keep
        the last MAX_VARIABLE_SECRETS, enough for every episode in flight)."""
        if value and value not in self._variable_secrets:
            self._variable_secrets = [*self._variable_secrets, value][-MAX_VARIABLE_SECRETS:]

    def mask(self, value: Any) -> Any:
        """`value` (JSON-like) with every known secret masked."""
        return mask_values(value, self.secrets)

    def masked_error(self, exc: AdapterError) -> AdapterError:
        """`exc` with known secrets masked in its message (also JSON- or URL-encoded)."""
        exc.args = (mask_encoded(str(exc), self.secrets),)
        return exc

    def new_adapter(self) -> CesAdapter:
        return CesAdapter(self)

    def _bind_loop(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._lock is None:
            # aio channels and locks belong to one loop; a new loop gets new ones.
            self._loop, self._clients, self._lock = loop, None, asyncio.Lock()
        return self._lock

    async def clients(self) -> Clients:
        async with self._bind_loop():
            if self._clients is None:
                self._clients = await make_clients(self.options, self.tokens)
            return self._clients

    async def preflight(self) -> None:
        """One cheap real call (GetApp): proves endpoint, credentials and app name."""
        from google.cloud import ces_v1

        clients = await self.clients()
        request = ces_v1.GetAppRequest(name=self.options.app_name)

        async def attempt(budget: float) -> Any:
            return await clients.agents.get_app(request=request, retry=None, timeout=budget)

        try:
            await call_with_retries(attempt, self.policy, what="GetApp", sleep=self.sleep)
        except AdapterError as exc:
            if "NOT_FOUND" in str(exc):
                raise AdapterConfigError(
                    f"ces: app {self.options.app_name} not found "
                    "(check --app-id, --project-id and --location)"
                ) from None
            raise self.masked_error(exc) from None

    async def tool_names(self) -> dict[str, str]:
        """Tool resource name -> client function name (all pages), once per run."""
        if self._tool_names is None:
            try:
                names = await self._list_tools()
            except AdapterError as exc:
                raise self.masked_error(exc) from None
            async with self._bind_loop():
                if self._tool_names is None:
                    self._tool_names = names
        return self._tool_names

    async def _list_tools(self) -> dict[str, str]:
        from google.cloud import ces_v1

        clients = await self.clients()
        names: dict[str, str] = {}
        token = ""
        for _ in range(self.options.max_pages):
            request = ces_v1.ListToolsRequest(
                parent=self.options.app_name, page_size=PAGE_SIZE, page_token=token
            )

            async def page(budget: float, request: Any = request) -> Any:
                return await clients.agents.list_tools(request=request, retry=None, timeout=budget)

            try:
                pager = await call_with_retries(
                    page, self.policy, what="ListTools", sleep=self.sleep
                )
            except AdapterError as exc:
                if "PERMISSION_DENIED" in str(exc):
                    # Session-only credentials: fall back to the calls' display names.
                    self.warnings.append(
                        f"{self.masked_error(exc)}; tool calls are named by their display name"
                    )
                    return {}
                raise
            for tool in pager.tools:
                if "client_function" in tool:
                    names[tool.name] = tool.client_function.name
            token = pager.next_page_token
            if not token:
                return names
        raise AdapterProtocolError(
            f"ces: ListTools: still more pages after {self.options.max_pages} "
            "(max_pages; the server keeps returning a next_page_token)"
        )

    async def aclose(self) -> None:
        clients, self._clients = self._clients, None
        if clients is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is clients.loop:
            await clients.close()


class CesAdapter:
    """One conversation with a CES app (one session per `start`)."""

    def __init__(self, provider: CesProvider) -> None:
        self.provider = provider
        self.options = provider.options
        self.session_name = ""
        self._transport: UnaryTransport | BidiTransport | None = None
        self._variables: dict[str, Any] = {}
        self._schemas: dict[str, Any] = {}
        self._tool_names: dict[str, str] = {}
        self._pending: dict[str, RawCall] = {}
        self._first = True
        self._state = "new"
        self._seq = 0

    async def start(self, session: SessionContext) -> None:
        from google.cloud import ces_v1

        await self.close()
        self._tool_names = await self.provider.tool_names()
        self._schemas = parameters_by_name(session.tools)
        self.session_name = self.options.session_name(session_id_for(session))
        config = ces_v1.SessionConfig(session=self.session_name)
        if self.options.deployment:
            config.deployment = self.options.deployment
        if self.options.entry_agent:
            config.entry_agent = self.options.entry_agent
        if self.options.time_zone:
            config.time_zone = self.options.time_zone
        if self.options.streaming:
            self._transport = BidiTransport(
                self.provider,
                config,
                max_messages=self.options.max_turn_messages,
                max_bytes=self.options.max_turn_bytes,
            )
        else:
            self._transport = UnaryTransport(self.provider, config)
        self._variables = self._render_variables(session)
        self._pending, self._first, self._seq, self._state = {}, True, 0, "open"

    def _render_variables(self, session: SessionContext) -> dict[str, Any]:
        split = session.metadata.get("task_split") or self.options.task_split
        values = {
            "task_id": "" if session.task_id is None else session.task_id,
            "user_id": session.user_id or "",
            "trial": session.trial,
            "session_id": session.session_id,
            "env": session.domain,
            "task_split": split,
        }
        out: dict[str, Any] = {}
        if self.options.sends_task_variables:
            out = {"env": session.domain, "task_split": split, "trial": session.trial}
            if session.task_id is not None:
                out["task_id"] = session.task_id
            if session.user_id:
                out["user_id"] = session.user_id
        for entry in self.options.variables:
            key, _, template = entry.partition("=")
            value = string.Formatter().vformat(template, (), values)
            out[key.strip()] = value
            if is_secret_key(key.strip()):
                self.provider.learn_secret(value)
        return out

    async def send(self, turn: AgentInput) -> AgentTurn:
        from google.cloud import ces_v1

        if self._state != "open" or self._transport is None:
            raise AdapterProtocolError(f"ces: send() on a {self._state} conversation")
        inputs: list[Any] = []
        skipped = 0
        if self._first and self._variables:
            inputs.append(ces_v1.SessionInput(variables=to_struct(self._variables)))
        if isinstance(turn, UserTurn):
            self._pending = {}
            inputs.append(ces_v1.SessionInput(text=turn.text))
        elif isinstance(turn, ToolResults):
            pending, self._pending = self._pending, {}
            responses = []
            for result in turn.results:
                call = pending.pop(result.call_id, None)
                if call is None:
                    raise AdapterProtocolError(
                        f"ces: result for unknown tool call {result.call_id!r}"
                    )
                responses.append(_tool_response(call, result.content, result.is_error))
            # Calls the loop did not run (per-turn limit): the agent learns they did not run.
            for call in pending.values():
                skipped += 1
                responses.append(_tool_response(call, NOT_EXECUTED, True))
            inputs.append(
                ces_v1.SessionInput(tool_responses=ces_v1.ToolResponses(tool_responses=responses))
            )
        else:
            raise AdapterProtocolError(f"ces: cannot send {type(turn).__name__}")
        started = time.perf_counter()
        try:
            exchanged = await self._transport.run(inputs)
        except AdapterError as exc:
            raise self.provider.masked_error(exc) from None
        latency = time.perf_counter() - started
        self._first = False
        agent_turn = self._turn(exchanged, latency)
        if skipped:
            agent_turn.extra["calls_not_executed"] = skipped
        if agent_turn.end_conversation or agent_turn.handoff:
            self._state = "ended"
        return agent_turn

    def _turn(self, exchanged: Exchanged, latency: float) -> AgentTurn:
        parsed: Parsed = exchanged.parsed
        log = exchanged.log
        mask = self.provider.mask
        turn = AgentTurn(messages=mask(list(parsed.texts)))
        for raw in parsed.calls:
            self._seq += 1
            call_id = f"ces_{self._seq}"
            name = self._function_name(raw)
            self._pending[call_id] = raw
            turn.tool_calls.append(
                ToolCall(
                    id=call_id,
                    name=name,
                    arguments=mask(restore_ints(raw.args, self._schemas.get(name))),
                    raw=mask(
                        {"id": raw.ces_id, "tool": raw.tool, "display_name": raw.display_name}
                    ),
                )
            )
        turn.end_conversation = parsed.end_session
        turn.handoff = parsed.escalated
        if not (turn.messages or turn.tool_calls or parsed.end_session):
            raise AdapterProtocolError(
                "ces: the agent's answer has no text, no tool call and no end of session"
                + (f" (only {', '.join(parsed.other)})" if parsed.other else "")
            )
        record: dict[str, Any] = {
            "request": mask(redact_variables(exchanged.request)),
            "response": mask(exchanged.response),
            "latency": latency,
            "attempts": log.attempts,
        }
        if log.retries:
            record["retries"] = log.retries
        turn.raw.append(record)
        extra: dict[str, Any] = {"ces_session": self.session_name, "latency": latency}
        if log.retries:
            extra["retries"] = log.retries
            extra["ambiguous_retries"] = sum(1 for r in log.retries if r.get("ambiguous"))
        if parsed.end_session:
            extra["end_session"] = parsed.end_metadata
        if parsed.payloads:
            extra["payloads"] = parsed.payloads
        if parsed.other:
            extra["other_outputs"] = parsed.other
        turn.extra = mask(extra)
        return turn

    def _function_name(self, call: RawCall) -> str:
        """The domain function a CES tool call means: the client function behind its tool
        resource (ListTools), else its display name, else the resource id; a name the
        domain knows wins."""
        candidates = [
            self._tool_names.get(call.tool),
            call.display_name,
            call.tool.rsplit("/", 1)[-1] if call.tool else None,
            getattr(call.toolset_tool, "tool_id", None),
        ]
        known = [c for c in candidates if c]
        for candidate in known:
            if candidate in self._schemas:
                return candidate
        if not known:
            raise AdapterProtocolError("ces: a tool call names no tool we can identify")
        return known[0]

    async def close(self) -> None:
        transport, self._transport = self._transport, None
        self._pending = {}
        if self._state != "new":
            self._state = "closed"
        if transport is not None:
            await transport.close()


def redact_variables(value: Any) -> Any:
    """A recorded request with the session variables of secret-looking names fingerprinted,
    as the run's header shows them (`tau_adapters.redaction.redact_secrets`)."""
    if isinstance(value, Mapping):
        return {
            k: redact_secrets(v)
            if k == "variables" and isinstance(v, Mapping)
            else redact_variables(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_variables(v) for v in value]
    return value


def _tool_response(call: RawCall, content: str, is_error: bool) -> Any:
    """The ToolResponse for `call`: echoes its id and tool, `output` or `error`."""
    from google.cloud import ces_v1

    response = ces_v1.ToolResponse(**call.identity())
    type(response).pb(response).response.CopyFrom(
        to_struct({"error": content} if is_error else {"output": content})
    )
    return response


def build(options: Mapping[str, Any]) -> AgentProvider:
    """Entry point `ces`: validate the options, make the provider (no network yet)."""
    return CesProvider(load_options(options))


build.options_model = Options  # type: ignore[attr-defined]

__all__ = ["CesAdapter", "CesProvider", "build", "load_options"]
