"""One conversation with an HTTP bot: the per-episode `AgentAdapter` of `HttpProvider`.

It keeps the conversation's variables and OpenAI-form history, renders the config's
templates, and maps replies to `AgentTurn`s; the shared clients are the provider's.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from adapters.http.config import BotConfig, RequestSpec, sendable_header_value
from adapters.http.mapping import MappedReply, MappingError, evaluate, map_reply
from adapters.http.templates import PLACEHOLDER, render_string
from adapters.http.transport import Exchange, HttpTransport, quote_payload
from tau_adapters.jsonsafe import printable
from tau_adapters.protocol import (
    AdapterConfigError,
    AdapterProtocolError,
    AgentInput,
    AgentTurn,
    SessionContext,
    ToolResults,
    Usage,
    UserTurn,
)

if TYPE_CHECKING:
    from adapters.http.adapter import HttpProvider


def _history_tool_calls(turn: AgentTurn) -> list[dict[str, Any]]:
    out = []
    for call in turn.tool_calls:
        try:
            arguments = json.dumps(call.arguments)
        except (TypeError, ValueError):
            arguments = json.dumps(str(call.arguments))
        out.append(
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": arguments},
            }
        )
    return out


class HttpAdapter:
    """One conversation with the bot."""

    def __init__(self, provider: HttpProvider) -> None:
        self.provider = provider
        self.config = provider.config
        self._vars: dict[str, Any] = {}
        self._history: list[dict[str, Any]] = []
        self._pending: list[Exchange] = []
        self._calls = 0
        self._transport: HttpTransport | None = None
        self._started = False

    # -- lifecycle ------------------------------------------------------------------

    async def start(self, session: SessionContext) -> None:
        await self.open(session)

    async def open(self, session: SessionContext, *, tool_endpoint: bool = True) -> None:
        """`start`; with `tool_endpoint=False` the tool variables stay null (pre-flight and
        `tau http check --probe` have no tool session)."""
        cfg = self.config
        self.prepare(session, tool_endpoint=tool_endpoint)
        if cfg.session.start is not None:
            await self._start_bot_session(cfg)
        self._started = True

    def prepare(self, session: SessionContext, *, tool_endpoint: bool = True) -> None:
        """The conversation's variables, before any call (`tool_endpoint=False`: leave
        the tool variables null, as pre-flight has no tool session)."""
        cfg = self.config
        self._transport = self.provider.transport()
        self._history = []
        self._pending = []
        self._vars = {
            "session_id": session.session_id,
            "bot_session_id": session.session_id,
            "domain": session.domain,
            "task_id": session.task_id,
            "task_split": session.metadata.get("task_split"),
            "user_id": session.user_id,
            "trial": session.trial,
            "turn": 0,
            "message": None,
            "history": self._history,
            "messages": [],
            "policy": session.policy,
            "tools": session.tools,
            "tool_results": None,
            "tool_result": None,
        }
        for name in ("tool_server_url", "tool_session_id", "tool_session_url", "tool_token"):
            self._vars[name] = None
        self._vars["tool_mcp_url"] = self._vars["tool_openapi_url"] = None
        if cfg.server_tools.enabled and tool_endpoint:
            self._use_tool_endpoint(session)
        self._vars["bot_session_id"] = render_string(cfg.session.id, self._vars)
        self._set_turn_vars()

    async def _start_bot_session(self, cfg: BotConfig) -> None:
        assert cfg.session.start is not None
        exchange = await self._call(cfg.session.start)
        self._pending.append(exchange)
        if cfg.session.id_path:
            try:
                sid = evaluate("session.id_path", cfg.session.id_path, exchange.document)
            except MappingError as exc:
                raise self._protocol_error(exchange, str(exc)) from None
            if not isinstance(sid, str | int) or isinstance(sid, bool) or sid == "":
                raise AdapterProtocolError(
                    f"session start reply from {exchange.method} {exchange.url} has no session "
                    f"id at session.id_path ({cfg.session.id_path!r}); payload: "
                    f"{quote_payload(self.provider.redactor, exchange.document)}"
                )
            self._vars["bot_session_id"] = self._header_safe_session_id(exchange, str(sid))

    def _header_safe_session_id(self, exchange: Exchange, sid: str) -> str:
        """`sid` as the bot gave it, or the bot's protocol error when a header template
        would put it (as text or `| tojson`) where HTTP cannot carry it: a line break or
        other control character, a non-ASCII character, blanks at the value's ends. Caught
        here, not when a later request cannot be built, where it would pass for a config
        error (the harness's): a header that is unusable with any id stays the config's."""

        def rendered(template: str, value: str) -> str:
            def sub(match: re.Match[str]) -> str:
                if match.group(1).split(".")[0] != "bot_session_id":
                    return "x"  # other variables: a neutral stand-in
                return render_string(match.group(0), {"bot_session_id": value})

            return PLACEHOLDER.sub(sub, template)

        for name, template in self._header_templates():
            if "bot_session_id" not in template:
                continue
            if sendable_header_value(rendered(template, "x")) and not sendable_header_value(
                rendered(template, sid)
            ):
                raise AdapterProtocolError(
                    f"session start reply from {exchange.method} {exchange.url} gives a "
                    f"session id (at session.id_path) not usable in an HTTP header: header "
                    f"{name!r} would hold a line break, control or non-ASCII character or "
                    f"start or end with a blank; session id: "
                    f"{quote_payload(self.provider.redactor, sid)}"
                )
        return sid

    def _header_templates(self) -> list[tuple[str, str]]:
        """Every header (name, value template) a request after `session.start` may send."""
        cfg = self.config
        specs = [cfg.message, cfg.tool_results_request(), cfg.session.end]
        headers = list(cfg.headers.items())
        for spec in specs:
            if spec is not None:
                headers += spec.headers.items()
        return headers

    def _use_tool_endpoint(self, session: SessionContext) -> None:
        endpoint = session.tool_endpoint
        if endpoint is None:
            raise AdapterConfigError(
                "server_tools is enabled but the harness gave this session no tool endpoint "
                "(run it through `tau run`, which starts the tool server)"
            )
        self.provider.redactor.add(endpoint.token)
        self._vars.update(
            tool_server_url=endpoint.base_url,
            tool_session_id=endpoint.session_id,
            tool_session_url=endpoint.session_url,
            tool_token=endpoint.token,
            tool_mcp_url=endpoint.mcp_url,
            tool_openapi_url=endpoint.openapi_url,
        )

    async def close(self) -> None:
        if not self._started:
            return
        self._started = False
        end = self.config.session.end
        if end is not None:
            await self._call(end)

    # -- turns ----------------------------------------------------------------------

    async def send(self, turn: AgentInput) -> AgentTurn:
        exchanges: list[Exchange] = []
        if isinstance(turn, UserTurn):
            self._history.append({"role": "user", "content": turn.text})
            self._set_turn_vars(message=turn.text, tool_results=None, tool_result=None)
            exchanges.append(await self._call(self.config.message))
        elif isinstance(turn, ToolResults):
            items = self._record_tool_results(turn)
            spec = self.config.tool_results_request()
            if self.config.tool_results.mode == "each":
                for item in items:
                    self._set_turn_vars(message=None, tool_results=[item], tool_result=item)
                    exchanges.append(await self._call(spec))
            else:
                self._set_turn_vars(message=None, tool_results=items, tool_result=None)
                exchanges.append(await self._call(spec))
        else:  # pragma: no cover - the loop sends nothing else
            raise AdapterProtocolError(f"unexpected input {type(turn).__name__}")
        reply = self._map(exchanges)
        all_exchanges = [*self._pending, *exchanges]
        self._pending = []
        agent_turn = AgentTurn(
            messages=[printable(self.provider.redactor.text(m)) for m in reply.messages],
            tool_calls=reply.tool_calls,
            end_conversation=reply.end,
            handoff=reply.handoff,
            raw=[e.record for e in all_exchanges],
            usage=self._usage(exchanges),
            extra={
                "latency": sum(e.latency for e in exchanges),
                "http": [
                    {
                        "method": e.method,
                        "url": e.url,
                        "status": e.status,
                        "latency": e.latency,
                        "attempts": e.attempts,
                    }
                    for e in all_exchanges
                ],
            },
        )
        assistant: dict[str, Any] = {"role": "assistant", "content": agent_turn.text or None}
        if agent_turn.tool_calls:
            assistant["tool_calls"] = _history_tool_calls(agent_turn)
        self._history.append(assistant)
        return agent_turn

    def _set_turn_vars(self, **values: Any) -> None:
        """Variables for the next request(s); `turn` counts `send` calls (0 at start)."""
        if values:
            self._vars.update(values)
            self._vars["turn"] = int(self._vars["turn"]) + 1
        policy = self._vars["policy"]
        system = [{"role": "system", "content": policy}] if policy else []
        self._vars["messages"] = system + self._history

    def _record_tool_results(self, turn: ToolResults) -> list[dict[str, Any]]:
        answered = {r.call_id for r in turn.results}
        # Calls the loop did not run (max_tool_calls_per_turn) were never made.
        if self._history and self._history[-1].get("tool_calls"):
            last = self._history[-1]
            last["tool_calls"] = [c for c in last["tool_calls"] if c["id"] in answered]
            if not last["tool_calls"]:
                del last["tool_calls"]
        items = []
        for r in turn.results:
            self._history.append({"role": "tool", "tool_call_id": r.call_id, "content": r.content})
            items.append(
                {
                    "tool_call_id": r.call_id,
                    "name": r.name,
                    "content": r.content,
                    "is_error": r.is_error,
                }
            )
        return items

    async def _call(self, spec: RequestSpec) -> Exchange:
        assert self._transport is not None, "start() first"
        return await self._transport.call(spec, self._vars)

    def _map(self, exchanges: list[Exchange]) -> MappedReply:
        merged = MappedReply()
        mapping = self.config.response
        for exchange in exchanges:
            if exchange.document is None and len(exchanges) > 1:
                continue
            try:
                reply = map_reply(exchange.document, mapping, counter=self._calls, allow_empty=True)
            except MappingError as exc:
                raise self._protocol_error(exchange, str(exc)) from None
            self._calls += len(reply.tool_calls)
            merged.messages += reply.messages
            merged.tool_calls += reply.tool_calls
            merged.end = merged.end or reply.end
            merged.handoff = merged.handoff or reply.handoff
        if not (merged.messages or merged.tool_calls or merged.end or merged.handoff):
            raise self._protocol_error(
                exchanges[-1],
                "the reply holds no message and no tool call "
                f"(response.messages={mapping.messages!r}, "
                f"response.tool_calls={mapping.tool_calls!r})",
            )
        return merged

    def _protocol_error(self, exchange: Exchange, reason: str) -> AdapterProtocolError:
        redactor = self.provider.redactor
        payload = quote_payload(redactor, exchange.document)
        return AdapterProtocolError(
            f"reply from {exchange.method} {exchange.url} does not match the response mapping: "
            f"{printable(redactor.text(reason))}; payload: {payload}"
        )

    def _usage(self, exchanges: list[Exchange]) -> Usage | None:
        spec = self.config.response.usage
        if spec is None:
            return None
        usage = Usage()
        for exchange in exchanges:
            usage.calls += 1
            for attr in ("prompt_tokens", "completion_tokens"):
                try:
                    value = evaluate(
                        f"response.usage.{attr}", getattr(spec, attr), exchange.document
                    )
                except MappingError as exc:
                    raise self._protocol_error(exchange, str(exc)) from None
                if isinstance(value, int) and not isinstance(value, bool):
                    setattr(usage, attr, getattr(usage, attr) + value)
        return usage
