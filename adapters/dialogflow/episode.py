"""One Dialogflow CX episode: the per-conversation `AgentAdapter` of the provider.

One episode is one Dialogflow session. Each `send` may take several DetectIntents (a
split user message, one per tool result); their answers are merged into one `AgentTurn`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from adapters.dialogflow.config import session_id_for
from adapters.dialogflow.queries import (
    NOT_EXECUTED,
    SESSION_MARKER,
    TEXT_HINT_LENGTH,
    result_query,
    session_was_reset,
    split_sentences,
    text_query,
    tool_call_result,
)
from adapters.dialogflow.responses import ParsedResponse, PendingToolCall, parse_response
from adapters.dialogflow.retry import RetryLog, call_with_retries
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
from tau_adapters.redaction import is_secret_key, redact_secrets
from tau_adapters.schema_values import parameters_by_name

if TYPE_CHECKING:
    from adapters.dialogflow.adapter import DialogflowProvider


def _trace_dict(message: Any, *path: str) -> dict[str, Any]:
    """`message` as a dict for the full trace, the session parameters at `path` (the
    request's `query_params.parameters`, the answer's `query_result.parameters`) redacted
    as the run header redacts `--session-param`: the value of a secret-looking name
    (`api_token`...) becomes its fingerprint."""
    out = message_to_dict(message)
    holder: Any = out
    for key in path[:-1]:
        holder = holder.get(key) if isinstance(holder, dict) else None
    if isinstance(holder, dict) and isinstance(holder.get(path[-1]), dict):
        holder[path[-1]] = redact_secrets(holder[path[-1]])
    return out


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
        for key, value in self._params.items():
            if is_secret_key(key) and isinstance(value, str):
                self.provider.param_secrets.add(value)
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
            self.provider.mask_error(exc)
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
            entry["request"] = _trace_dict(request, "query_params", "parameters")
            entry["response"] = _trace_dict(response, "query_result", "parameters")
        else:
            entry["input"] = query.WhichOneof("input")
            entry["response_id"] = response.response_id
        if log.retries:
            entry["retries"] = log.retries
        acc.turn.raw.append(self.provider.mask(entry))
        self._absorb(parsed, acc)

    def _absorb(self, parsed: ParsedResponse, acc: _Accumulator) -> None:
        turn = acc.turn
        mask = self.provider.mask
        turn.messages.extend(mask(parsed.texts))
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
        acc.other.extend(mask(parsed.other))
        if parsed.generative_info:
            acc.generative_info.append(mask(parsed.generative_info))
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


__all__ = ["DialogflowAdapter"]
