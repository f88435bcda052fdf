"""The gRPC services of the Dialogflow emulator: Sessions, Tools, Playbooks and Agents.

The package ships no servicer stubs, so methods are registered with
`grpc.method_handlers_generic_handler` using the proto-plus types' serialize/deserialize.
Every call first passes the fault plan; the conversation logic itself is `Emulator`'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import grpc

from adapters.dialogflow.harness.emulator.faults import Fault
from adapters.dialogflow.harness.emulator.rpc import PACKAGE, RpcFailure, abort
from adapters.dialogflow.harness.emulator.store import StoreError

if TYPE_CHECKING:
    from adapters.dialogflow.harness.emulator.server import Emulator


class Services:
    """The method handlers of one emulator (call counts and faults are the emulator's)."""

    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator

    async def _guard(self, method: str, context: grpc.aio.ServicerContext) -> None:
        self.emulator.calls[method] += 1
        fault: Fault | None = self.emulator.faults.take(method)
        if fault is not None:
            await abort(context, fault.code.name, fault.text, fault.retry_delay)

    def _unary(self, method: str, fn: Callable[[Any], Any]) -> Callable[..., Any]:
        async def handler(request: Any, context: grpc.aio.ServicerContext) -> Any:
            await self._guard(method, context)
            try:
                result = fn(request)
                if asyncio.iscoroutine(result):
                    result = await result
                return result
            except RpcFailure as exc:
                await abort(context, exc.code, str(exc), exc.retry_delay)
            except StoreError as exc:
                await abort(context, exc.code, str(exc))

        return handler

    def handlers(self) -> list[grpc.GenericRpcHandler]:
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
                "DetectIntent",
                self.emulator.detect_intent,
                cx.DetectIntentRequest,
                cx.DetectIntentResponse,
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
                "GetTool",
                lambda r: self.emulator.store.get("tool", r.name),
                cx.GetToolRequest,
                cx.Tool,
            ),
            "CreateTool": unary(
                "CreateTool",
                lambda r: self.emulator.store.create_tool(r.parent, r.tool),
                cx.CreateToolRequest,
                cx.Tool,
            ),
            "UpdateTool": unary(
                "UpdateTool",
                lambda r: self.emulator.store.update("tool", r.tool, list(r.update_mask.paths)),
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
                lambda r: self.emulator.store.get("playbook", r.name),
                cx.GetPlaybookRequest,
                cx.Playbook,
            ),
            "CreatePlaybook": unary(
                "CreatePlaybook",
                lambda r: self.emulator.store.create_playbook(r.parent, r.playbook),
                cx.CreatePlaybookRequest,
                cx.Playbook,
            ),
            "UpdatePlaybook": unary(
                "UpdatePlaybook",
                lambda r: self.emulator.store.update(
                    "playbook", r.playbook, list(r.update_mask.paths)
                ),
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
                lambda r: self.emulator.store.agent(r.name).message(),
                cx.GetAgentRequest,
                cx.Agent,
            ),
            "UpdateAgent": unary(
                "UpdateAgent",
                lambda r: self.emulator.store.update_agent(r.agent, list(r.update_mask.paths)),
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
        return min(requested or 100, self.emulator.max_page_size)

    def _list_tools(self, request: Any) -> Any:
        from google.cloud import dialogflowcx_v3beta1 as cx

        items, token = self.emulator.store.page(
            "tool", request.parent, self._page_size(request.page_size), request.page_token
        )
        return cx.ListToolsResponse(tools=items, next_page_token=token)

    def _list_playbooks(self, request: Any) -> Any:
        from google.cloud import dialogflowcx_v3beta1 as cx

        items, token = self.emulator.store.page(
            "playbook", request.parent, self._page_size(request.page_size), request.page_token
        )
        return cx.ListPlaybooksResponse(playbooks=items, next_page_token=token)

    def _delete(self, kind: str) -> Callable[[Any], Any]:
        def delete(request: Any) -> Any:
            from google.protobuf import empty_pb2

            self.emulator.store.delete(kind, request.name)
            return empty_pb2.Empty()

        return delete

    async def _server_streaming(
        self, request: Any, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Any]:
        from google.cloud import dialogflowcx_v3beta1 as cx

        await self._guard("ServerStreamingDetectIntent", context)
        try:
            response = await self.emulator.detect_intent(request)
        except (RpcFailure, StoreError) as exc:
            await abort(context, exc.code, str(exc), getattr(exc, "retry_delay", None))
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
            await abort(context, "INVALID_ARGUMENT", "no request received")
            return
        kind = type(first.query_input).pb(first.query_input).WhichOneof("input")
        if kind not in ("text", "tool_call_result"):
            await abort(context, "INVALID_ARGUMENT", f"the emulator does not stream {kind} input")
            return
        request = cx.DetectIntentRequest(
            session=first.session,
            query_params=first.query_params,
            query_input=first.query_input,
            response_view=first.response_view,
        )
        try:
            response = await self.emulator.detect_intent(request)
        except (RpcFailure, StoreError) as exc:
            await abort(context, exc.code, str(exc), getattr(exc, "retry_delay", None))
            return
        response.response_type = cx.DetectIntentResponse.ResponseType.FINAL
        yield cx.StreamingDetectIntentResponse(detect_intent_response=response)
