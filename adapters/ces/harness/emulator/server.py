"""A local CES (v1) gRPC server with a local agent as its brain.

Serves SessionService (RunSession, BidiRunSession) and the AgentService methods the
adapter and provisioning use (apps, agents, tools: Get/List/Create/Update/Delete;
CreateApp answers a finished long-running operation) over plain-text gRPC on
127.0.0.1. The package ships no servicer stubs, so methods are registered with
`grpc.method_handlers_generic_handler` and the proto-plus types' (de)serializers.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import grpc

from adapters.ces.harness.emulator.faults import FaultPlan
from adapters.ces.harness.emulator.sessions import (
    EmulatedSession,
    SessionError,
    context_for,
    outputs_for,
    results_for,
)
from adapters.ces.harness.emulator.store import Store, StoreError
from adapters.ces.structs import to_python
from tau_adapters.protocol import AgentTurn, UserTurn
from tau_adapters.registry import AgentProvider, build_provider
from tau_bench.listen import grpc_listen_address

PACKAGE = "google.cloud.ces.v1"


class RpcFailure(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def status_details(code: grpc.StatusCode, message: str, retry_delay: float | None) -> bytes:
    """A serialized google.rpc.Status with a RetryInfo (the `grpc-status-details-bin`)."""
    from google.protobuf import any_pb2, duration_pb2
    from google.rpc import error_details_pb2, status_pb2

    status = status_pb2.Status(code=code.value[0], message=message)
    if retry_delay is not None:
        whole = int(retry_delay)
        info = error_details_pb2.RetryInfo(
            retry_delay=duration_pb2.Duration(
                seconds=whole, nanos=round((retry_delay - whole) * 1e9)
            )
        )
        packed = any_pb2.Any()
        packed.Pack(info)
        status.details.append(packed)
    return bytes(status.SerializeToString())


def split_session(name: str) -> tuple[str, str]:
    """(app name, session id) of `projects/P/locations/L/apps/A/sessions/S`."""
    parts = (name or "").split("/")
    if (
        len(parts) != 8
        or [parts[0], parts[2], parts[4], parts[6]] != ["projects", "locations", "apps", "sessions"]
        or not all(parts)
    ):
        raise RpcFailure("INVALID_ARGUMENT", f"malformed session name {name!r}")
    return "/".join(parts[:6]), parts[7]


class Emulator:
    """The emulated service: `await start()`, point clients at `address`, `await stop()`.

    `brain`/`brain_options` name the agent strategy answering (or pass `provider`);
    `env` is the default domain; `auto_apps` makes any app exist on first use with the
    domain's tools (see store.py); `max_page_size` caps List pages.
    """

    def __init__(
        self,
        *,
        brain: str = "oracle",
        brain_options: Mapping[str, Any] | None = None,
        env: str = "retail",
        data_dir: str | Path | None = None,
        auto_apps: bool = True,
        max_page_size: int = 1000,
        provider: AgentProvider | None = None,
    ) -> None:
        from adapters.ces.harness.toolspec import tool_message
        from tau_bench.suites import load_domain

        domain = load_domain(env, data_dir)
        self.env = env
        self.data_dir = data_dir
        self.brain_name = brain if provider is None else type(provider).__name__
        self.provider = provider or build_provider(brain, dict(brain_options or {}))
        self.store = Store(
            lambda: [tool_message(s) for s in domain.tool_schemas], auto_apps=auto_apps
        )
        self.max_page_size = max(1, max_page_size)
        self.sessions: dict[str, EmulatedSession] = {}
        self.faults = FaultPlan()
        self.calls: Counter[str] = Counter()
        self.address = ""
        self._server: grpc.aio.Server | None = None

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        target = grpc_listen_address(host, port)
        server = grpc.aio.server()
        server.add_generic_rpc_handlers(self._handlers())
        bound = server.add_insecure_port(target)
        if not bound:
            raise OSError(f"cannot listen on {target}")
        await server.start()
        self._server, self.address = server, f"{target.rsplit(':', 1)[0]}:{bound}"
        return self.address

    async def stop(self, grace: float | None = None) -> None:
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None
        for session in list(self.sessions.values()):
            await self._close(session)
        self.sessions.clear()
        await self.provider.aclose()

    async def _close(self, session: EmulatedSession) -> None:
        session.ended = True
        brain, session.brain = session.brain, None
        if brain is not None:
            try:
                await brain.close()
            except Exception:
                pass

    # Sessions ------------------------------------------------------------------------------
    def _session(self, name: str) -> EmulatedSession:
        app_name, _ = split_session(name)
        session = self.sessions.get(name)
        if session is None:
            session = EmulatedSession(name=name, app=self.store.app(app_name))
            self.sessions[name] = session
        if session.ended:
            raise RpcFailure("FAILED_PRECONDITION", f"session {name} has ended")
        return session

    async def _brain(self, session: EmulatedSession) -> Any:
        if session.brain is None:
            _, session_id = split_session(session.name)
            context = context_for(session.variables, session_id, self.env, self.data_dir)
            brain = self.provider.new_adapter()
            try:
                await brain.start(context)
            except Exception as exc:
                hint = " (send session variables env, task_id)" if context.task is None else ""
                raise RpcFailure(
                    "FAILED_PRECONDITION", f"brain {self.brain_name}: {exc}{hint}"
                ) from None
            session.brain = brain
        return session.brain

    async def run_inputs(self, config: Any, inputs: list[Any]) -> list[Any]:
        """The outputs for one batch of inputs (RunSession, or one Bidi turn)."""
        session = self._session(config.session)
        outputs: list[Any] = []
        async with session.lock:
            answered = False
            for item in inputs:
                kind = type(item).pb(item).WhichOneof("input_type")
                try:
                    if kind == "variables":
                        variables = to_python(type(item).pb(item).variables)
                        session.variables.update(variables)
                        continue
                    if kind == "text":
                        brain = await self._brain(session)
                        session.pending = []
                        turn: AgentTurn = await brain.send(UserTurn(item.text))
                    elif kind == "tool_responses":
                        brain = await self._brain(session)
                        turn = await brain.send(results_for(session, item.tool_responses))
                    else:
                        raise RpcFailure(
                            "INVALID_ARGUMENT",
                            f"the emulator accepts text, variables and tool_responses, not {kind}",
                        )
                except SessionError as exc:
                    raise RpcFailure(exc.code, str(exc)) from None
                except RpcFailure:
                    raise
                except Exception as exc:
                    raise RpcFailure("INTERNAL", f"brain {self.brain_name} failed: {exc}") from None
                answered = True
                outputs.extend(outputs_for(session, turn))
                if session.ended:
                    break
            if not answered:
                raise RpcFailure("INVALID_ARGUMENT", "no text or tool_responses input")
            if session.ended:
                await self._close(session)
        return outputs

    async def run_session(self, request: Any) -> Any:
        from google.cloud import ces_v1

        outputs = await self.run_inputs(request.config, list(request.inputs))
        return ces_v1.RunSessionResponse(outputs=outputs)

    async def _bidi(
        self, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Any]:
        from google.cloud import ces_v1

        # Faults apply per turn, once its inputs are read: the way a server fails a turn,
        # and no race with the client's writes.
        self.calls["BidiRunSession"] += 1
        config = None
        buffered: list[Any] = []
        async for message in requests:
            kind = type(message).pb(message).WhichOneof("message_type")
            if kind == "config":
                config = message.config
                continue
            if kind != "realtime_input" or config is None:
                await self._abort(context, "INVALID_ARGUMENT", "send the config message first")
                return
            buffered.append(message.realtime_input)
            if message.realtime_input.will_continue:
                continue
            batch, buffered = buffered, []
            fault = self.faults.take("BidiRunSession")
            if fault is not None:
                await self._abort(context, fault.code.name, fault.message, fault.retry_delay)
                return
            try:
                outputs = await self.run_inputs(config, batch)
            except (RpcFailure, StoreError) as exc:
                await self._abort(context, exc.code, str(exc))
                return
            for output in outputs:
                if "end_session" in output:
                    yield ces_v1.BidiSessionServerMessage(end_session=output.end_session)
                else:
                    yield ces_v1.BidiSessionServerMessage(session_output=output)

    # Apps, agents, tools ------------------------------------------------------------------
    def _create_app(self, request: Any) -> Any:
        from google.cloud import ces_v1
        from google.longrunning import operations_pb2
        from google.protobuf import any_pb2

        app = self.store.create_app(request.parent, request.app, request.app_id)
        packed = any_pb2.Any()
        packed.Pack(ces_v1.App.pb(app))
        return operations_pb2.Operation(
            name=f"{request.parent}/operations/create-{app.name.rsplit('/', 1)[-1]}",
            done=True,
            response=packed,
        )

    def _list(self, kind: str, response_cls: Any, field: str) -> Callable[[Any], Any]:
        def handler(request: Any) -> Any:
            size = min(request.page_size or 100, self.max_page_size)
            items, token = self.store.page(kind, request.parent, size, request.page_token)
            return response_cls(**{field: items, "next_page_token": token})

        return handler

    # gRPC plumbing -------------------------------------------------------------------------
    async def _guard(self, method: str, context: grpc.aio.ServicerContext) -> None:
        self.calls[method] += 1
        fault = self.faults.take(method)
        if fault is not None:
            await self._abort(context, fault.code.name, fault.message, fault.retry_delay)

    async def _abort(
        self,
        context: grpc.aio.ServicerContext,
        code_name: str,
        message: str,
        retry_delay: float | None = None,
    ) -> None:
        code = grpc.StatusCode[code_name]
        details = status_details(code, message, retry_delay)
        await context.abort(
            code, message, trailing_metadata=(("grpc-status-details-bin", details),)
        )

    def _unary(self, method: str, fn: Callable[[Any], Any], req: Any, resp: Any) -> Any:
        async def handler(request: Any, context: grpc.aio.ServicerContext) -> Any:
            await self._guard(method, context)
            try:
                result = fn(request)
                if asyncio.iscoroutine(result):
                    result = await result
                return result
            except (RpcFailure, StoreError) as exc:
                await self._abort(context, exc.code, str(exc))

        serialize = resp.serialize if hasattr(resp, "serialize") else resp.SerializeToString
        return grpc.unary_unary_rpc_method_handler(
            handler, request_deserializer=req.deserialize, response_serializer=serialize
        )

    def _handlers(self) -> list[grpc.GenericRpcHandler]:
        from google.cloud import ces_v1
        from google.longrunning import operations_pb2
        from google.protobuf import empty_pb2

        store = self.store
        u = self._unary

        def deleter(kind: str) -> Callable[[Any], Any]:
            def delete(request: Any) -> Any:
                store.delete(kind, request.name)
                return empty_pb2.Empty()

            return delete

        def getter(kind: str) -> Callable[[Any], Any]:
            return lambda request: store.get(kind, request.name)

        def updater(kind: str, field: str) -> Callable[[Any], Any]:
            def update(request: Any) -> Any:
                return store.update(kind, getattr(request, field), list(request.update_mask.paths))

            return update

        def create_agent(r: Any) -> Any:
            return store.create_agent(r.parent, r.agent, r.agent_id)

        def create_tool(r: Any) -> Any:
            return store.create_tool(r.parent, r.tool, r.tool_id)

        sessions = {
            "RunSession": u(
                "RunSession", self.run_session, ces_v1.RunSessionRequest, ces_v1.RunSessionResponse
            ),
            "BidiRunSession": grpc.stream_stream_rpc_method_handler(
                self._bidi,
                request_deserializer=ces_v1.BidiSessionClientMessage.deserialize,
                response_serializer=ces_v1.BidiSessionServerMessage.serialize,
            ),
        }
        table: list[tuple[str, Callable[[Any], Any], Any, Any]] = [
            ("GetApp", lambda r: store.app(r.name).app, ces_v1.GetAppRequest, ces_v1.App),
            (
                "ListApps",
                self._list("apps", ces_v1.ListAppsResponse, "apps"),
                ces_v1.ListAppsRequest,
                ces_v1.ListAppsResponse,
            ),
            ("CreateApp", self._create_app, ces_v1.CreateAppRequest, operations_pb2.Operation),
            ("UpdateApp", updater("apps", "app"), ces_v1.UpdateAppRequest, ces_v1.App),
        ]
        creators = {"agents": create_agent, "tools": create_tool}
        for kind, singular, field in (("agents", "Agent", "agent"), ("tools", "Tool", "tool")):
            msg_cls = getattr(ces_v1, singular)
            list_resp = getattr(ces_v1, f"List{singular}sResponse")
            table += [
                (f"Get{singular}", getter(kind), getattr(ces_v1, f"Get{singular}Request"), msg_cls),
                (
                    f"List{singular}s",
                    self._list(kind, list_resp, kind),
                    getattr(ces_v1, f"List{singular}sRequest"),
                    list_resp,
                ),
                (
                    f"Create{singular}",
                    creators[kind],
                    getattr(ces_v1, f"Create{singular}Request"),
                    msg_cls,
                ),
                (
                    f"Update{singular}",
                    updater(kind, field),
                    getattr(ces_v1, f"Update{singular}Request"),
                    msg_cls,
                ),
                (
                    f"Delete{singular}",
                    deleter(kind),
                    getattr(ces_v1, f"Delete{singular}Request"),
                    empty_pb2.Empty,
                ),
            ]
        agents = {name: u(name, fn, req, resp) for name, fn, req, resp in table}
        return [
            grpc.method_handlers_generic_handler(f"{PACKAGE}.SessionService", sessions),
            grpc.method_handlers_generic_handler(f"{PACKAGE}.AgentService", agents),
        ]
