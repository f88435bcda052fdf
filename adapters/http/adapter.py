"""The HTTP chatbot adapter: any bot a config file describes becomes an `AgentAdapter`.

`build(options)` reads the config named by `options["http_config"]` (or
`options["agent_options"]["http_config"]`; a path, or an already-parsed mapping) and
returns an `HttpProvider`: one shared `httpx.AsyncClient` per event loop, and (in
server-side-tools mode) a request for the harness's tool server. Each episode gets an
`HttpAdapter` that keeps the conversation's variables and OpenAI-form history, renders the
config's templates, and maps replies to `AgentTurn`s.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import Mapping
from typing import Any

import httpx
import jmespath

from adapters.http.config import BotConfig, ConfigError, LoadedConfig, RequestSpec, load_config
from adapters.http.mapping import MappedReply, MappingError, map_reply
from adapters.http.options import HttpOptions
from adapters.http.templates import render_string
from adapters.http.transport import Exchange, HttpTransport, Sleep, quote_payload
from tau_adapters.jsonsafe import printable
from tau_adapters.protocol import (
    AdapterConfigError,
    AdapterError,
    AdapterProtocolError,
    AdapterTimeoutError,
    AgentInput,
    AgentTurn,
    SessionContext,
    ToolResults,
    ToolServerRequest,
    Usage,
    UserTurn,
)
from tau_adapters.redaction import Redactor
from tau_adapters.registry import AgentProvider


class HttpConfigError(AdapterConfigError):
    """A bad HTTP bot config (shown as one line by the CLI)."""


class HttpProvider:
    """Built once per run: the config and shared HTTP clients.

    In server-side-tools mode (`server_tools: {enabled: true}`) it asks the harness for a
    tool server (`tool_server`); each episode's session then carries its endpoint.
    """

    def __init__(self, loaded: LoadedConfig, *, sleep: Sleep | None = None) -> None:
        self.loaded = loaded
        self.config: BotConfig = loaded.config
        self.redactor = Redactor(loaded.secrets, max_chars=loaded.config.raw_max_chars)
        self._sleep = sleep
        self._clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}
        # Optional provider attributes (tau_adapters.registry): the config's `name:` names
        # the agent; the digest is of the config with secret values redacted.
        self.display_name: str | None = self.config.name
        redacted = self.redactor.value(self.config.model_dump(mode="json"))
        self.config_digest = hashlib.sha256(
            json.dumps(redacted, sort_keys=True, default=str).encode("utf-8")
        ).hexdigest()
        st = self.config.server_tools
        self.tool_server: ToolServerRequest | None = (
            ToolServerRequest(host=st.host, port=st.port, public_url=st.public_url, ttl=st.ttl)
            if st.enabled
            else None
        )

    def new_adapter(self) -> HttpAdapter:
        return HttpAdapter(self)

    @property
    def secrets(self) -> list[str]:
        """Every value to mask wherever it reappears (config secrets, tool tokens handed
        out so far): the runner masks them in the whole episode record, so a bot that
        echoes its token or an API key leaks it into no output."""
        return self.redactor.secrets

    async def preflight(self) -> None:
        """One cheap real call before the first episode, so a wrong URL or credential
        fails the run in seconds: the config's `health` request if it has one, else one
        `session.start` (and `session.end`), else a TCP connection to `base_url`'s host.
        Raises the adapter error the episodes would have met (AdapterAuthError on
        401/403, AdapterTimeoutError past the deadlines...)."""
        adapter = HttpAdapter(self)
        session = SessionContext(
            session_id=f"tau-preflight-{uuid.uuid4().hex[:12]}", domain="", tools=[]
        )
        if self.config.health is not None:
            adapter.prepare(session, tool_endpoint=False)
            await adapter._call(self.config.health)
        elif self.config.session.start is not None:
            await adapter.open(session, tool_endpoint=False)
            await adapter.close()
        else:
            await self._connect()

    async def _connect(self) -> None:
        url = httpx.URL(self.config.base_url)
        port = url.port or (443 if url.scheme == "https" else 80)
        timeout = self.config.timeouts.connect
        try:
            async with asyncio.timeout(timeout):
                _, writer = await asyncio.open_connection(url.host, port)
        except TimeoutError:
            raise AdapterTimeoutError(
                f"HTTP bot at {url.host}:{port} did not accept a connection within {timeout:g} s"
            ) from None
        except OSError as exc:
            raise AdapterError(
                f"cannot reach the HTTP bot at {url.host}:{port}: {exc.strerror or exc}",
                retryable=True,
            ) from None
        writer.close()
        await writer.wait_closed()

    def transport(self) -> HttpTransport:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            t = self.config.timeouts
            client = httpx.AsyncClient(
                timeout=httpx.Timeout(connect=t.connect, read=t.read, write=t.write, pool=t.pool),
                follow_redirects=False,
            )
            self._clients[loop] = client
        return HttpTransport(client, self.config, self.redactor, sleep=self._sleep)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.items()), {}
        running = asyncio.get_running_loop()
        for loop, client in clients:
            if loop is running:
                await client.aclose()


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
            sid = jmespath.search(cfg.session.id_path, exchange.document)
            if not isinstance(sid, str | int) or isinstance(sid, bool) or sid == "":
                raise AdapterProtocolError(
                    f"session start reply from {exchange.method} {exchange.url} has no session "
                    f"id at session.id_path ({cfg.session.id_path!r}); payload: "
                    f"{quote_payload(self.provider.redactor, exchange.document)}"
                )
            self._vars["bot_session_id"] = str(sid)

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
            messages=[printable(m) for m in reply.messages],
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
        payload = quote_payload(self.provider.redactor, exchange.document)
        return AdapterProtocolError(
            f"reply from {exchange.method} {exchange.url} does not match the response mapping: "
            f"{reason}; payload: {payload}"
        )

    def _usage(self, exchanges: list[Exchange]) -> Usage | None:
        spec = self.config.response.usage
        if spec is None:
            return None
        usage = Usage()
        for exchange in exchanges:
            usage.calls += 1
            for attr in ("prompt_tokens", "completion_tokens"):
                expr = getattr(spec, attr)
                value = jmespath.search(expr, exchange.document) if expr else None
                if isinstance(value, int) and not isinstance(value, bool):
                    setattr(usage, attr, getattr(usage, attr) + value)
        return usage


def _config_source(options: Mapping[str, Any]) -> Any:
    source = options.get("http_config")
    if not source:
        nested = options.get("agent_options")
        if isinstance(nested, Mapping):
            source = nested.get("http_config")
    return source


def build(options: Mapping[str, Any]) -> AgentProvider:
    """The `http` agent strategy: `options["http_config"]` names the bot's config."""
    source = _config_source(options)
    if not source:
        raise HttpConfigError(
            "the http agent needs a bot config: pass --http-config FILE "
            "(see `tau http init --preset NAME`)"
        )
    try:
        loaded = load_config(source)
    except ConfigError as exc:
        raise HttpConfigError(str(exc)) from None
    return HttpProvider(loaded)


build.options_model = HttpOptions  # type: ignore[attr-defined]
