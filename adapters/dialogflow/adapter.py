"""The Dialogflow CX ("decibel") adapter: a hosted playbook agent as an `AgentAdapter`.

One episode is one Dialogflow session (`…/agents/A[/environments/E]/sessions/<episode id>`).
A user turn is a DetectIntent with text; the agent's function-tool calls come back as
`tool_call` response messages and are surfaced to the loop as `ToolCall`s, which runs them
on the local τ-bench DB; each observation goes back in its own DetectIntent
(`ToolCallResult`, echoing `tool` and `action`), because a request holds exactly one.
Whatever those requests answer (more text, more tool calls, nothing) is accumulated into
the one `AgentTurn` the loop gets back.

Observations map to one shape: `output_parameters = {"result": "<observation>"}`, and
observations the env marks as errors (`Error: …`, `Unknown action …`) become
`ToolCallResult.error.message = "<observation>"`.

The provider (`build(options)`, entry points `dialogflow-cx` and `decibel`) is shared by a
run's episodes: clients, the tool-name map from ListTools, and the rate limiter.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from adapters.dialogflow.clients import Clients, make_clients
from adapters.dialogflow.config import DialogflowConfig, load_config, session_id_for
from adapters.dialogflow.options import DialogflowOptions
from adapters.dialogflow.responses import ParsedResponse, PendingToolCall, parse_response, raw
from adapters.dialogflow.retry import (
    RetryLog,
    RetryPolicy,
    Sleep,
    TokenBucket,
    call_with_retries,
)
from adapters.dialogflow.structs import message_to_dict, python_to_struct, struct_to_python
from tau_adapters.protocol import (
    AdapterError,
    AdapterLimitError,
    AdapterProtocolError,
    AdapterTimeoutError,
    AdapterUnavailableError,
    AgentInput,
    AgentTurn,
    SessionContext,
    ToolCall,
    ToolResults,
    UserTurn,
)
from tau_adapters.registry import AgentProvider
from tau_adapters.schema_values import parameters_by_name

SESSION_MARKER = "tau_session"
NOT_EXECUTED = "Error: tool call not executed (the evaluation harness limits tool calls per turn)"
LIST_PAGE_SIZE = 100
TEXT_HINT_LENGTH = 256  # Dialogflow's documented text-input limit (ES; CX likely similar)


def split_sentences(text: str, limit: int) -> list[str]:
    """`text` as consecutive pieces of at most `limit` characters, cut after sentence
    ends (`.`, `!`, `?` then a space) where possible, else at a space, else hard."""
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[: limit + 1]
        cut = max(window.rfind(end, 0, limit) for end in (". ", "! ", "? "))
        cut = cut + 1 if cut > 0 else window.rfind(" ", 0, limit + 1)
        if cut <= 0:
            cut = limit
        pieces.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        pieces.append(rest)
    return pieces


def session_was_reset(response: Any) -> bool:
    """Whether a later response's session parameters lack the first request's marker
    (only when the agent reports parameters at all)."""
    params = raw(response).query_result.parameters
    return bool(params.fields) and SESSION_MARKER not in params.fields


def is_error_observation(text: str) -> bool:
    """τ-bench's error observations (what `Env.execute` returns for failures)."""
    return text.startswith("Error:") or text.startswith("Unknown action")


def tool_call_result(call: PendingToolCall, content: str, is_error: bool) -> Any:
    """The one documented shape of an observation sent back to Dialogflow (raw protobuf:
    requests are built raw on the hot path, see `_request`)."""
    from google.cloud import dialogflowcx_v3beta1 as cx

    result = cx.ToolCallResult.pb()(tool=call.tool, action=call.action)
    if is_error or is_error_observation(content):
        result.error.message = content
    else:
        result.output_parameters["result"] = content
    return result


def text_query(text: str, language_code: str) -> Any:
    """A raw QueryInput carrying user text."""
    from google.cloud import dialogflowcx_v3beta1 as cx

    query = cx.QueryInput.pb()(language_code=language_code)
    query.text.text = text
    return query


def result_query(result: Any, language_code: str) -> Any:
    """A raw QueryInput carrying one raw ToolCallResult."""
    from google.cloud import dialogflowcx_v3beta1 as cx

    query = cx.QueryInput.pb()(language_code=language_code)
    query.tool_call_result.CopyFrom(result)
    return query


class DialogflowProvider:
    """Shared by all episodes of a run: clients, tool names, rate limit, retry policy."""

    def __init__(self, config: DialogflowConfig, *, sleep: Sleep = asyncio.sleep) -> None:
        self.config = config
        self.display_name = config.agent_id  # optional provider attribute: names the agent
        self.policy = RetryPolicy(
            max_attempts=config.max_attempts,
            initial=config.retry_initial,
            maximum=config.retry_max,
            ambiguous_retries=config.ambiguous_retries,
        )
        self.sleep = sleep
        self.warnings: list[str] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clients: Clients | None = None
        self._tool_names: dict[str, str] | None = None
        self._tool_names_error: AdapterError | None = None
        self._lock: asyncio.Lock | None = None
        self._bucket: TokenBucket | None = None

    def new_adapter(self) -> DialogflowAdapter:
        return DialogflowAdapter(self)

    def _bind_loop(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._lock is None:
            # aio channels and locks belong to one loop; a new loop gets new ones.
            self._loop = loop
            self._clients = None
            self._lock = asyncio.Lock()
            self._bucket = (
                TokenBucket(self.config.rate_limit, sleep=self.sleep)
                if self.config.rate_limit
                else None
            )
        return self._lock

    async def clients(self) -> Clients:
        lock = self._bind_loop()
        async with lock:
            if self._clients is None:
                self._clients = await make_clients(self.config)
            return self._clients

    @property
    def full_trace(self) -> bool:
        return self.config.trace == "full"

    async def throttle(self) -> None:
        """Wait for the shared rate limit (if any) before one request."""
        self._bind_loop()
        if self._bucket is not None:
            await self._bucket.acquire()

    async def preflight(self) -> None:
        """Before the first episode: make the clients (credentials) and list the agent's
        tools once, bounded by `call_deadline`. The answer (or the failure) is kept and
        shared by every episode: a run whose credentials or endpoint are wrong fails in
        one call's time, not once per episode."""
        await self.tool_names()

    async def tool_names(self) -> dict[str, str]:
        """Tool resource name -> function name (function tools, all pages), once per run;
        a failure is kept too, so later episodes fail at once with the same error."""
        if self._tool_names is not None:
            return self._tool_names
        if self._tool_names_error is not None:
            raise self._tool_names_error
        clients = await self.clients()
        lock = self._bind_loop()
        async with lock:
            if self._tool_names_error is not None:
                raise self._tool_names_error
            if self._tool_names is None:
                try:
                    async with asyncio.timeout(self.config.call_deadline):
                        self._tool_names = await self._list_tools(clients)
                except TimeoutError:
                    self._tool_names_error = AdapterTimeoutError(
                        f"dialogflow ListTools: no answer within {self.config.call_deadline:g} s "
                        "(call_deadline); check the network, the endpoint and the credentials"
                    )
                    raise self._tool_names_error from None
                except AdapterError as exc:
                    self._tool_names_error = exc
                    raise
            return self._tool_names

    async def _list_tools(self, clients: Clients) -> dict[str, str]:
        from google.cloud import dialogflowcx_v3beta1 as cx

        names: dict[str, str] = {}
        token = ""
        while True:
            request = cx.ListToolsRequest(
                parent=self.config.agent_name, page_size=LIST_PAGE_SIZE, page_token=token
            )

            async def page(request: Any = request) -> Any:
                return await clients.tools.list_tools(
                    request=request, retry=None, timeout=self.config.timeout
                )

            try:
                pager = await call_with_retries(
                    page,
                    self.policy,
                    what="ListTools",
                    sleep=self.sleep,
                    before_attempt=self.throttle,
                )
            except AdapterError as exc:
                if "PERMISSION_DENIED" in str(exc):
                    # DetectIntent-only credentials: fall back to the calls' `action`.
                    self.warnings.append(f"{exc}; tool calls are named by their action")
                    return {}
                raise
            for tool in pager.tools:
                if type(tool).pb(tool).WhichOneof("specification") == "function_spec":
                    names[tool.name] = tool.display_name
            token = pager.next_page_token
            if not token:
                return names

    async def aclose(self) -> None:
        clients, self._clients = self._clients, None
        if clients is not None:
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is clients.loop:
                await clients.close()


@dataclass
class _Accumulator:
    """Everything the responses to one `send` said, merged into one AgentTurn."""

    turn: AgentTurn = field(default_factory=AgentTurn)
    latencies: list[float] = field(default_factory=list)
    generative_info: list[dict[str, Any]] = field(default_factory=list)
    other: list[dict[str, Any]] = field(default_factory=list)
    retries: list[dict[str, Any]] = field(default_factory=list)
    match_types: list[str] = field(default_factory=list)
    conversation_success: bool = False
    skipped_calls: int = 0
    text_parts: int = 0

    @property
    def ended(self) -> bool:
        return self.turn.end_conversation or self.turn.handoff

    def finish(self, session_path: str) -> AgentTurn:
        extra: dict[str, Any] = {
            "dialogflow_session": session_path,
            "requests": len(self.latencies),
            "latencies": self.latencies,
        }
        if self.generative_info:
            extra["generative_info"] = self.generative_info
        if self.other:
            extra["other_messages"] = [o["kind"] for o in self.other]
        if self.retries:
            extra["retries"] = self.retries
            extra["ambiguous_retries"] = sum(1 for r in self.retries if r.get("ambiguous"))
        if self.match_types:
            extra["match_types"] = self.match_types
        if self.conversation_success:
            extra["conversation_success"] = True
        if self.skipped_calls:
            extra["calls_not_executed"] = self.skipped_calls
        if self.text_parts:
            extra["text_split_into"] = self.text_parts
        self.turn.extra = extra
        return self.turn


class DialogflowAdapter:
    """One conversation with a Dialogflow CX agent (one session per `start`)."""

    def __init__(self, provider: DialogflowProvider) -> None:
        self.provider = provider
        self.config = provider.config
        self._session_path = ""
        self._params: dict[str, Any] = {}
        self._params_pb: dict[str, Any] = {}
        self._schemas: dict[str, Any] = {}
        self._tool_names: dict[str, str] = {}
        self._pending: dict[str, PendingToolCall] = {}
        self._first = True
        self._state = "new"
        self._seq = 0
        self._text_parts = 0

    @property
    def session_path(self) -> str:
        return self._session_path

    async def start(self, session: SessionContext) -> None:
        await self.provider.clients()
        self._tool_names = await self.provider.tool_names()
        self._schemas = parameters_by_name(session.tools)
        self._session_path = self.config.session_path(session_id_for(session))
        self._params = self.config.render_params(session)
        self._pending = {}
        self._params_pb = {}
        self._first = True
        self._seq = 0
        self._state = "open"

    async def send(self, turn: AgentInput) -> AgentTurn:
        if self._state != "open":
            raise AdapterProtocolError(f"dialogflow: send() on a {self._state} conversation")
        acc = _Accumulator()
        lang = self.config.language_code
        if isinstance(turn, UserTurn):
            self._pending = {}
            parts = self._text_inputs(turn.text)
            for part in parts:
                await self._exchange(text_query(part, lang), acc)
                if acc.ended:
                    break
            if len(parts) > 1:
                acc.text_parts = len(parts)
        elif isinstance(turn, ToolResults):
            pending, self._pending = self._pending, {}
            for result in turn.results:
                call = pending.pop(result.call_id, None)
                if call is None:
                    raise AdapterProtocolError(
                        f"dialogflow: result for unknown tool call {result.call_id!r}"
                    )
                answer = tool_call_result(call, result.content, result.is_error)
                await self._exchange(result_query(answer, lang), acc)
                if acc.ended:
                    break
            # Calls the loop dropped (per-turn limit): tell the agent they did not run.
            for call in pending.values() if not acc.ended else []:
                acc.skipped_calls += 1
                answer = tool_call_result(call, NOT_EXECUTED, True)
                await self._exchange(result_query(answer, lang), acc)
                if acc.ended:
                    break
        else:
            raise AdapterProtocolError(f"dialogflow: cannot send {type(turn).__name__}")
        return acc.finish(self._session_path)

    def _text_inputs(self, text: str) -> list[str]:
        """The text input(s) for one user message, by the `long_text` policy: a message
        over `text_limit` fails the episode (`AdapterLimitError`, kind
        `agent_platform_limit`) or is split at sentence boundaries."""
        limit = self.config.text_limit
        if not limit or len(text) <= limit:
            return [text]
        if self.config.long_text == "split":
            return split_sentences(text, limit)
        raise AdapterLimitError(
            f"dialogflow: the user message has {len(text)} characters; the agent takes at "
            f"most {limit} (text_limit) and long_text is 'fail' (use --long-text split to "
            "send it as consecutive messages split at sentence boundaries)"
        )

    def _query_params(self, first: bool) -> Any:
        """The raw QueryParameters of the first or of any later request (built once per
        episode: they do not change within it)."""
        from google.cloud import dialogflowcx_v3beta1 as cx

        params = cx.QueryParameters.pb()()
        # Sent on every request (the API takes them on any): a session the service
        # recreated still knows its task. The marker goes only on the first, so a reset
        # session shows by lacking it.
        if self._params or first:
            values = dict(self._params)
            if first:
                values[SESSION_MARKER] = True
            params.parameters.CopyFrom(python_to_struct(values))
        if self.config.session_ttl:
            params.session_ttl.seconds = self.config.session_ttl
        return params

    def _request(self, query: Any) -> Any:
        """The DetectIntentRequest for raw QueryInput `query`, built as raw protobuf and
        wrapped once (proto-plus would marshal every field on every request)."""
        from google.cloud import dialogflowcx_v3beta1 as cx

        key = "first" if self._first else "later"
        params = self._params_pb.get(key)
        if params is None:
            params = self._params_pb[key] = self._query_params(self._first)
        request = cx.DetectIntentRequest.pb()(session=self._session_path)
        request.query_input.CopyFrom(query)
        request.query_params.CopyFrom(params)
        if self.config.response_view:
            request.response_view = getattr(
                cx.DetectIntentResponseView,
                f"DETECT_INTENT_RESPONSE_VIEW_{self.config.response_view}",
            )
        return cx.DetectIntentRequest.wrap(request)

    async def _exchange(self, query: Any, acc: _Accumulator) -> None:
        clients = await self.provider.clients()
        request = self._request(query)
        log = RetryLog()

        async def call() -> Any:
            return await clients.sessions.detect_intent(
                request=request, retry=None, timeout=self.config.timeout
            )

        started = time.perf_counter()
        deadline = self.config.call_deadline
        try:
            async with asyncio.timeout(deadline):
                response = await call_with_retries(
                    call,
                    self.provider.policy,
                    what="DetectIntent",
                    log=log,
                    sleep=self.provider.sleep,
                    before_attempt=self.provider.throttle,
                )
        except TimeoutError:
            raise AdapterTimeoutError(
                f"dialogflow DetectIntent: no answer within {deadline:g} s (call_deadline) "
                f"after {log.attempts} attempts"
            ) from None
        except AdapterError as exc:
            if not self._first and "NOT_FOUND" in str(exc):
                raise AdapterUnavailableError(
                    f"dialogflow: the session expired or was deleted mid-episode ({exc}); "
                    "the agent lost the conversation"
                ) from None
            note = ""
            if log.retries:
                note = f" (after {log.attempts} attempts)"
            text = query.text.text if query.HasField("text") else ""
            if "INVALID_ARGUMENT" in str(exc) and len(text) > TEXT_HINT_LENGTH:
                note += (
                    f" (the user message has {len(text)} characters; Dialogflow limits text input)"
                )
            if note:
                exc.args = (f"{exc.args[0]}{note}",)
            raise
        latency = time.perf_counter() - started
        first, self._first = self._first, False
        full = self.provider.full_trace
        parsed = parse_response(response, full=full)
        if not first and session_was_reset(response):
            raise AdapterUnavailableError(
                "dialogflow: the session was reset mid-episode (its parameters lost the "
                f"{SESSION_MARKER!r} marker set on the first request: expired or "
                "restarted); the agent lost the conversation"
            )
        acc.latencies.append(latency)
        acc.retries.extend(log.retries)
        entry: dict[str, Any] = {"latency": latency, "attempts": log.attempts}
        if full:
            entry["request"] = message_to_dict(request)
            entry["response"] = message_to_dict(response)
        else:
            entry["input"] = query.WhichOneof("input")
            entry["response_id"] = response.response_id
        if log.retries:
            entry["retries"] = log.retries
        acc.turn.raw.append(entry)
        self._absorb(parsed, acc)

    def _absorb(self, parsed: ParsedResponse, acc: _Accumulator) -> None:
        turn = acc.turn
        turn.messages.extend(parsed.texts)
        for call in parsed.tool_calls:
            self._seq += 1
            name = self._function_name(call)
            call_id = f"df_{self._seq}"
            arguments = struct_to_python(call.input_parameters, self._schemas.get(name))
            self._pending[call_id] = call
            turn.tool_calls.append(
                ToolCall(
                    id=call_id,
                    name=name,
                    arguments=arguments,
                    raw={"tool": call.tool, "action": call.action},
                )
            )
        turn.end_conversation = turn.end_conversation or parsed.end_interaction
        turn.handoff = turn.handoff or parsed.handoff
        acc.conversation_success = acc.conversation_success or parsed.conversation_success
        acc.other.extend(parsed.other)
        if parsed.generative_info:
            acc.generative_info.append(parsed.generative_info)
        if parsed.match_type:
            acc.match_types.append(parsed.match_type)

    def _function_name(self, call: PendingToolCall) -> str:
        """The domain function a Dialogflow tool call means: the ListTools display name
        of its resource, else its action; a name the domain knows is preferred."""
        mapped = self._tool_names.get(call.tool)
        for candidate in (mapped, call.action):
            if candidate and candidate in self._schemas:
                return candidate
        return mapped or call.action

    async def close(self) -> None:
        # Dialogflow sessions expire by themselves; nothing to release remotely.
        self._pending = {}
        self._state = "closed"


def build(options: Mapping[str, Any]) -> AgentProvider:
    """Entry point (`dialogflow-cx`, `decibel`): validate options, make the provider."""
    return DialogflowProvider(load_config(options))


build.options_model = DialogflowOptions  # type: ignore[attr-defined]


__all__ = ["DialogflowAdapter", "DialogflowProvider", "build"]
