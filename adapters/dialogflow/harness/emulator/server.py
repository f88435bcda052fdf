"""A local Dialogflow CX (v3beta1) gRPC server with a local agent as its brain.

Serves Sessions (DetectIntent, ServerStreamingDetectIntent, StreamingDetectIntent),
Tools (List/Get/Create/Update/Delete), Playbooks (List/Get/Create/Update/Delete) and
Agents (Get/Update: the start playbook) over plain-text gRPC. The package ships no servicer stubs, so methods
are registered with `grpc.method_handlers_generic_handler` using the proto-plus types'
serialize/deserialize. Sessions are keyed by their full path and expire when idle
(30 minutes, or the request's `session_ttl`).
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import grpc

from adapters.dialogflow.harness.emulator.faults import Fault, FaultPlan
from adapters.dialogflow.harness.emulator.sessions import (
    EmulatedSession,
    SessionError,
    answer_text,
    answer_tool_result,
    context_for,
    turn_messages,
)
from adapters.dialogflow.harness.emulator.store import Store, StoreError
from adapters.dialogflow.structs import struct_to_python
from tau_adapters.protocol import AdapterConfigError, AgentTurn
from tau_adapters.registry import AgentProvider, build_provider

PACKAGE = "google.cloud.dialogflow.cx.v3beta1"
FAULTS_ENV = "TAU_DF_EMULATOR_FAULTS"
DEFAULT_IDLE = 1800.0
MAX_TTL = 86400.0
_SESSION_PARTS = 8  # projects/P/locations/L/agents/A/sessions/S


class RpcFailure(Exception):
    """End the current call with `code` (a grpc.StatusCode name) and `message`."""

    def __init__(self, code: str, message: str, retry_delay: float | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.retry_delay = retry_delay


def _status_details(code: grpc.StatusCode, message: str, retry_delay: float | None) -> bytes:
    """A serialized google.rpc.Status carrying a RetryInfo (the `-bin` trailer)."""
    from google.protobuf import any_pb2, duration_pb2
    from google.rpc import error_details_pb2, status_pb2

    status = status_pb2.Status(code=code.value[0], message=message)
    if retry_delay is not None:
        seconds = int(retry_delay)
        info = error_details_pb2.RetryInfo(
            retry_delay=duration_pb2.Duration(
                seconds=seconds, nanos=round((retry_delay - seconds) * 1e9)
            )
        )
        detail = any_pb2.Any()
        detail.Pack(info)
        status.details.append(detail)
    return bytes(status.SerializeToString())


def parse_session_path(path: str) -> tuple[str, str]:
    """(agent name, session id) of `…/agents/A[/environments/E]/sessions/S`."""
    parts = (path or "").split("/")
    if len(parts) == _SESSION_PARTS + 2 and parts[6] == "environments":
        parts = parts[:6] + parts[8:]
    if (
        len(parts) != _SESSION_PARTS
        or parts[0] != "projects"
        or parts[2] != "locations"
        or parts[4] != "agents"
        or parts[6] != "sessions"
        or not all(parts)
    ):
        raise RpcFailure("INVALID_ARGUMENT", f"malformed session name {path!r}")
    if len(parts[7]) > 36:
        raise RpcFailure("INVALID_ARGUMENT", "session id must be at most 36 characters")
    return "/".join(parts[:6]), parts[7]


class Emulator:
    """The emulated service. `await start()`, point clients at `address`, `await stop()`.

    `brain`/`brain_options`: the agent strategy answering (built with `build_provider`), or
    pass a ready `provider`. `env`: the default domain (a session may pick another with the
    `env` parameter). `preload_tools`: new agents start with the domain's function tools.
    `max_page_size` caps List pages (to exercise paging). `idle_ttl`/`clock`: session
    expiry. `per_result`: hand each tool result to the brain as it arrives instead of all
    of a turn's results at once. `faults`: the injection queue (see `faults.py`).
    """

    def __init__(
        self,
        *,
        brain: str = "oracle",
        brain_options: Mapping[str, Any] | None = None,
        env: str = "airline",
        data_dir: str | Path | None = None,
        preload_tools: bool = True,
        max_page_size: int = 1000,
        idle_ttl: float = DEFAULT_IDLE,
        clock: Callable[[], float] = time.monotonic,
        provider: AgentProvider | None = None,
        per_result: bool = False,
    ) -> None:
        from tau_bench.suites import load_domain

        self.env = env
        self.data_dir = data_dir
        domain = load_domain(env, data_dir)
        self.brain_name = brain
        self.provider = provider or build_provider(brain, dict(brain_options or {}))
        self.store = Store(domain.tool_schemas if preload_tools else ())
        self.max_page_size = max(1, max_page_size)
        self.idle_ttl = idle_ttl
        self.clock = clock
        self.sessions: dict[str, EmulatedSession] = {}
        self.faults = FaultPlan()
        self.calls: Counter[str] = Counter()
        self.per_result = per_result
        self.address = ""
        self._server: grpc.aio.Server | None = None
        if os.environ.get(FAULTS_ENV):
            self.faults.load(os.environ[FAULTS_ENV])

    # Lifecycle -------------------------------------------------------------------------
    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        server = grpc.aio.server()
        server.add_generic_rpc_handlers(self._handlers())
        bound = server.add_insecure_port(f"{host}:{port}")
        if not bound:
            raise OSError(f"cannot listen on {host}:{port}")
        await server.start()
        self._server = server
        self.address = f"{host}:{bound}"
        return self.address

    async def stop(self, grace: float | None = None) -> None:
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None
        for session in list(self.sessions.values()):
            await self._close(session)
        self.sessions.clear()
        await self.provider.aclose()

    async def wait(self) -> None:
        if self._server is not None:
            await self._server.wait_for_termination()

    # Sessions --------------------------------------------------------------------------
    async def _close(self, session: EmulatedSession) -> None:
        session.ended = True
        if session.brain is not None:
            try:
                await session.brain.close()
            except Exception:
                pass
            session.brain = None

    async def expire_idle(self) -> int:
        """Drop sessions idle longer than their TTL; returns how many were dropped."""
        now = self.clock()
        stale = [s for s in self.sessions.values() if now - s.last_used > s.ttl]
        for session in stale:
            self.sessions.pop(session.path, None)
            await self._close(session)
        return len(stale)

    def _session(self, path: str) -> EmulatedSession:
        agent_name, _ = parse_session_path(path)
        session = self.sessions.get(path)
        if session is None:
            session = EmulatedSession(
                path=path,
                agent=self.store.agent(agent_name),
                ttl=self.idle_ttl,
                per_result=self.per_result,
            )
            self.sessions[path] = session
        return session

    async def detect_intent(self, request: Any) -> Any:
        """The DetectIntent logic, shared by the unary and streaming methods."""
        from google.cloud import dialogflowcx_v3beta1 as cx

        query = request.query_input
        if not query.language_code:
            raise RpcFailure("INVALID_ARGUMENT", "query_input.language_code is required")
        await self.expire_idle()
        session = self._session(request.session)
        async with session.lock:
            params_pb = type(request.query_params).pb(request.query_params)
            if params_pb.HasField("parameters"):
                for key, value in struct_to_python(params_pb.parameters).items():
                    if value is None:
                        session.params.pop(key, None)
                    else:
                        session.params[key] = value
            if params_pb.HasField("session_ttl"):
                ttl = params_pb.session_ttl.seconds + params_pb.session_ttl.nanos / 1e9
                if not 0 < ttl <= MAX_TTL:
                    raise RpcFailure("INVALID_ARGUMENT", "session_ttl must be in (0, 1 day]")
                session.ttl = ttl
            session.last_used = self.clock()
            if session.brain is None:
                await self._start_brain(session)
            kind = type(query).pb(query).WhichOneof("input")
            result = cx.QueryResult(language_code=query.language_code)
            trace: list[Any] = []
            try:
                if kind == "text":
                    result.text = query.text.text
                    trace.append(cx.Action(user_utterance=cx.UserUtterance(text=query.text.text)))
                    turn = await answer_text(session, query.text.text)
                elif kind == "tool_call_result":
                    tcr = query.tool_call_result
                    trace.append(cx.Action(tool_use=cx.ToolUse(tool=tcr.tool, action=tcr.action)))
                    turn = await answer_tool_result(session, tcr)
                else:
                    raise RpcFailure(
                        "INVALID_ARGUMENT",
                        f"the emulator accepts text and tool_call_result inputs, not {kind}",
                    )
            except SessionError as exc:
                raise RpcFailure(exc.code, str(exc)) from None
            except RpcFailure:
                raise
            except Exception as exc:
                raise RpcFailure("INTERNAL", f"brain {self.brain_name} failed: {exc}") from None
            messages = turn_messages(session, turn) if turn is not None else []
            result.response_messages = messages
            result.parameters = session.params
            result.match = cx.Match(match_type=cx.Match.MatchType.PLAYBOOK)
            trace.extend(_trace_of(turn))
            result.generative_info = cx.GenerativeInfo(
                current_playbooks=session.agent.active_playbooks(),
                action_tracing_info=cx.Example(actions=trace),
            )
            if turn is not None and (turn.end_conversation or turn.handoff):
                self.sessions.pop(session.path, None)
                await self._close(session)
            return cx.DetectIntentResponse(response_id=str(uuid.uuid4()), query_result=result)

    async def _start_brain(self, session: EmulatedSession) -> None:
        _, session_id = parse_session_path(session.path)
        try:
            context = context_for(session.params, session_id, self.env, self.data_dir)
        except SessionError as exc:
            raise RpcFailure(exc.code, str(exc)) from None
        brain = self.provider.new_adapter()
        try:
            await brain.start(context)
        except AdapterConfigError as exc:
            hint = ""
            if context.task is None:
                hint = " (send session parameters task_id, task_split and env)"
            raise RpcFailure(
                "FAILED_PRECONDITION", f"brain {self.brain_name}: {exc}{hint}"
            ) from None
        except Exception as exc:
            raise RpcFailure(
                "INTERNAL", f"brain {self.brain_name} failed to start: {exc}"
            ) from None
        session.brain = brain

    # gRPC plumbing ---------------------------------------------------------------------
    async def _guard(self, method: str, context: grpc.aio.ServicerContext) -> None:
        self.calls[method] += 1
        fault: Fault | None = self.faults.take(method)
        if fault is not None:
            await self._abort(context, fault.code.name, fault.text, fault.retry_delay)

    async def _abort(
        self,
        context: grpc.aio.ServicerContext,
        code_name: str,
        message: str,
        retry_delay: float | None = None,
    ) -> None:
        code = grpc.StatusCode[code_name]
        trailer = (("grpc-status-details-bin", _status_details(code, message, retry_delay)),)
        await context.abort(code, message, trailing_metadata=trailer)

    def _unary(self, method: str, fn: Callable[[Any], Any]) -> Callable[..., Any]:
        async def handler(request: Any, context: grpc.aio.ServicerContext) -> Any:
            await self._guard(method, context)
            try:
                result = fn(request)
                if asyncio.iscoroutine(result):
                    result = await result
                return result
            except RpcFailure as exc:
                await self._abort(context, exc.code, str(exc), exc.retry_delay)
            except StoreError as exc:
                await self._abort(context, exc.code, str(exc))

        return handler

    def _handlers(self) -> list[grpc.GenericRpcHandler]:
        from google.cloud import dialogflowcx_v3beta1 as cx
        from google.protobuf import empty_pb2

        def unary(method: str, fn: Callable[[Any], Any], req: Any, resp: Any) -> Any:
            serialize = resp.SerializeToString if resp is empty_pb2.Empty else resp.serialize
            return grpc.unary_unary_rpc_method_handler(
                self._unary(method, fn),
                request_deserializer=req.deserialize,
                response_serializer=serialize,
            )

        sessions = {
            "DetectIntent": unary(
                "DetectIntent", self.detect_intent, cx.DetectIntentRequest, cx.DetectIntentResponse
            ),
            "ServerStreamingDetectIntent": grpc.unary_stream_rpc_method_handler(
                self._server_streaming,
                request_deserializer=cx.DetectIntentRequest.deserialize,
                response_serializer=cx.DetectIntentResponse.serialize,
            ),
            "StreamingDetectIntent": grpc.stream_stream_rpc_method_handler(
                self._streaming,
                request_deserializer=cx.StreamingDetectIntentRequest.deserialize,
                response_serializer=cx.StreamingDetectIntentResponse.serialize,
            ),
        }
        tools = {
            "ListTools": unary(
                "ListTools", self._list_tools, cx.ListToolsRequest, cx.ListToolsResponse
            ),
            "GetTool": unary(
                "GetTool", lambda r: self.store.get("tool", r.name), cx.GetToolRequest, cx.Tool
            ),
            "CreateTool": unary(
                "CreateTool",
                lambda r: self.store.create_tool(r.parent, r.tool),
                cx.CreateToolRequest,
                cx.Tool,
            ),
            "UpdateTool": unary(
                "UpdateTool",
                lambda r: self.store.update("tool", r.tool, list(r.update_mask.paths)),
                cx.UpdateToolRequest,
                cx.Tool,
            ),
            "DeleteTool": unary(
                "DeleteTool", self._delete("tool"), cx.DeleteToolRequest, empty_pb2.Empty
            ),
        }
        playbooks = {
            "ListPlaybooks": unary(
                "ListPlaybooks",
                self._list_playbooks,
                cx.ListPlaybooksRequest,
                cx.ListPlaybooksResponse,
            ),
            "GetPlaybook": unary(
                "GetPlaybook",
                lambda r: self.store.get("playbook", r.name),
                cx.GetPlaybookRequest,
                cx.Playbook,
            ),
            "CreatePlaybook": unary(
                "CreatePlaybook",
                lambda r: self.store.create_playbook(r.parent, r.playbook),
                cx.CreatePlaybookRequest,
                cx.Playbook,
            ),
            "UpdatePlaybook": unary(
                "UpdatePlaybook",
                lambda r: self.store.update("playbook", r.playbook, list(r.update_mask.paths)),
                cx.UpdatePlaybookRequest,
                cx.Playbook,
            ),
            "DeletePlaybook": unary(
                "DeletePlaybook",
                self._delete("playbook"),
                cx.DeletePlaybookRequest,
                empty_pb2.Empty,
            ),
        }
        agents = {
            "GetAgent": unary(
                "GetAgent",
                lambda r: self.store.agent(r.name).message(),
                cx.GetAgentRequest,
                cx.Agent,
            ),
            "UpdateAgent": unary(
                "UpdateAgent",
                lambda r: self.store.update_agent(r.agent, list(r.update_mask.paths)),
                cx.UpdateAgentRequest,
                cx.Agent,
            ),
        }
        return [
            grpc.method_handlers_generic_handler(f"{PACKAGE}.{name}", table)
            for name, table in (
                ("Sessions", sessions),
                ("Tools", tools),
                ("Playbooks", playbooks),
                ("Agents", agents),
            )
        ]

    def _page_size(self, requested: int) -> int:
        return min(requested or 100, self.max_page_size)

    def _list_tools(self, request: Any) -> Any:
        from google.cloud import dialogflowcx_v3beta1 as cx

        items, token = self.store.page(
            "tool", request.parent, self._page_size(request.page_size), request.page_token
        )
        return cx.ListToolsResponse(tools=items, next_page_token=token)

    def _list_playbooks(self, request: Any) -> Any:
        from google.cloud import dialogflowcx_v3beta1 as cx

        items, token = self.store.page(
            "playbook", request.parent, self._page_size(request.page_size), request.page_token
        )
        return cx.ListPlaybooksResponse(playbooks=items, next_page_token=token)

    def _delete(self, kind: str) -> Callable[[Any], Any]:
        def delete(request: Any) -> Any:
            from google.protobuf import empty_pb2

            self.store.delete(kind, request.name)
            return empty_pb2.Empty()

        return delete

    async def _server_streaming(
        self, request: Any, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Any]:
        from google.cloud import dialogflowcx_v3beta1 as cx

        await self._guard("ServerStreamingDetectIntent", context)
        try:
            response = await self.detect_intent(request)
        except (RpcFailure, StoreError) as exc:
            await self._abort(context, exc.code, str(exc), getattr(exc, "retry_delay", None))
            return
        response.response_type = cx.DetectIntentResponse.ResponseType.FINAL
        yield response

    async def _streaming(
        self, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Any]:
        from google.cloud import dialogflowcx_v3beta1 as cx

        await self._guard("StreamingDetectIntent", context)
        first = None
        async for item in requests:
            first = item
            break
        if first is None:
            await self._abort(context, "INVALID_ARGUMENT", "no request received")
            return
        kind = type(first.query_input).pb(first.query_input).WhichOneof("input")
        if kind not in ("text", "tool_call_result"):
            await self._abort(
                context, "INVALID_ARGUMENT", f"the emulator does not stream {kind} input"
            )
            return
        request = cx.DetectIntentRequest(
            session=first.session,
            query_params=first.query_params,
            query_input=first.query_input,
            response_view=first.response_view,
        )
        try:
            response = await self.detect_intent(request)
        except (RpcFailure, StoreError) as exc:
            await self._abort(context, exc.code, str(exc), getattr(exc, "retry_delay", None))
            return
        response.response_type = cx.DetectIntentResponse.ResponseType.FINAL
        yield cx.StreamingDetectIntentResponse(detect_intent_response=response)


def _trace_of(turn: AgentTurn | None) -> list[Any]:
    """The playbook trace of a brain turn (agent utterances and tool uses)."""
    from google.cloud import dialogflowcx_v3beta1 as cx

    if turn is None:
        return []
    actions = [cx.Action(agent_utterance=cx.AgentUtterance(text=t)) for t in turn.messages]
    for call in turn.tool_calls:
        actions.append(cx.Action(tool_use=cx.ToolUse(action=call.name, display_name=call.name)))
    return actions
