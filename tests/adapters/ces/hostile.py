"""A misbehaving CES service for tests: a real gRPC server on 127.0.0.1 (a threaded server,
so async tests and synchronous CLI tests can both use it), plain text or TLS with a
self-signed certificate made on the spot, and a local OAuth token endpoint that hands out
a new access token on every refresh."""

from __future__ import annotations

import http.server
import json
import threading
from collections import Counter
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
from google.cloud import ces_v1
from google.longrunning import operations_pb2
from google.rpc import status_pb2

from tests.certificates import self_signed

CES = "google.cloud.ces.v1"
# Status details trailers api_core fails on: not a google.rpc.Status (DecodeError), and a
# Status whose code differs from the call's (ValueError).
BAD_DETAILS = {
    "garbage_details": b"\xff\xfe garbage",
    "mismatched_details": status_pb2.Status(code=3, message="other").SerializeToString(),
}
GARBAGE = b"\xff\xfe\xfd not a protobuf message"
APP = "projects/proj/locations/us/apps/app-1"


def _bytes(message: Any) -> bytes:
    pb = type(message).pb(message) if hasattr(type(message), "pb") else message
    data: bytes = pb.SerializeToString()
    return data


class HostileCes:
    """CES methods whose behaviour the test picks by `mode`:

    * `echo_auth_text` / `echo_auth_error`: RunSession answers (or fails with) the
      caller's authorization header; `echo_auth_getapp`: GetApp fails with it;
    * `huge`: RunSession answers a text of `huge_bytes`;
    * `nan_payload`: RunSession answers a text and a payload holding NaN and Infinity;
    * `nan_args`: RunSession answers a tool call whose arguments hold NaN and -Infinity;
    * `endless_stream`: BidiRunSession streams text outputs, never `turn_completed`;
    * `endless_pages`: ListTools (and ListAgents) always return a next_page_token;
    * `controls`: ListTools and RunSession answer control characters;
    * `lro_error` / `lro_never`: GetApp is NOT_FOUND and CreateApp's operation fails /
      never finishes;
    * `garbage_<handler>` (`garbage_run_session`, `garbage_bidi`, `garbage_get_app`,
      `garbage_list_tools`...): that method answers bytes that are no protobuf message;
    * `big_metadata`: RunSession fails with a status message over gRPC's metadata limit.
    """

    def __init__(self, mode: str, *, tls: bool = False, huge_bytes: int = 0) -> None:
        self.mode = mode
        self.huge_bytes = huge_bytes
        self.calls: Counter[str] = Counter()
        self.authorizations: list[str] = []
        self.cert: bytes | None = None
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=8),
            options=[("grpc.max_send_message_length", -1)],
        )
        self.server.add_generic_rpc_handlers(self._handlers())
        if tls:
            key, self.cert = self_signed()
            creds = grpc.ssl_server_credentials([(key, self.cert)])
            self.port = self.server.add_secure_port("127.0.0.1:0", creds)
        else:
            self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.address = f"127.0.0.1:{self.port}"

    def __enter__(self) -> HostileCes:
        self.server.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.stop(grace=None).wait(30)

    # ------------------------------------------------------------------ handlers
    def _seen(self, name: str, context: grpc.ServicerContext) -> str:
        self.calls[name] += 1
        auth = dict(context.invocation_metadata()).get("authorization", "")
        self.authorizations.append(str(auth))
        return str(auth)

    def run_session(self, data: bytes, context: grpc.ServicerContext) -> bytes:
        auth = self._seen("RunSession", context)
        if self.mode in BAD_DETAILS:  # UNAVAILABLE whose details api_core cannot read
            context.set_trailing_metadata((("grpc-status-details-bin", BAD_DETAILS[self.mode]),))
            context.abort(grpc.StatusCode.UNAVAILABLE, "try later")
        if self.mode == "big_metadata":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "E" * 100_000)
        if self.mode == "echo_auth_error":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"bad request; you sent {auth}")
        if self.mode == "echo_auth_text":
            text = f"your header is {auth}; as JSON {json.dumps({'t': auth})}"
            return _bytes(text_response(text))
        if self.mode == "huge":
            return _bytes(text_response("x" * self.huge_bytes))
        if self.mode == "nan_payload":
            payload = ces_v1.SessionOutput()
            pb = type(payload).pb(payload)
            pb.payload.fields["v"].number_value = float("nan")
            pb.payload.fields["w"].list_value.values.add().number_value = float("inf")
            pb.payload.fields["d"].struct_value.fields["x"].number_value = float("-inf")
            return _bytes(
                ces_v1.RunSessionResponse(
                    outputs=[
                        ces_v1.SessionOutput(text="hello"),
                        payload,
                        ces_v1.SessionOutput(turn_completed=True),
                    ]
                )
            )
        if self.mode == "nan_args":
            output = ces_v1.SessionOutput()
            call = type(output).pb(output).tool_calls.tool_calls.add()
            call.id = "c1"
            call.tool = f"{APP}/tools/calculate"
            call.display_name = "calculate"
            call.args.fields["expression"].number_value = float("nan")
            call.args.fields["nested"].list_value.values.add().number_value = float("-inf")
            return _bytes(ces_v1.RunSessionResponse(outputs=[output]))
        if self.mode == "controls":
            return _bytes(text_response("hi \x1b[2J\x1b[31mRED \x9b31m C1 \u202eRTL\u202c end"))
        return _bytes(text_response("hello"))

    def bidi(self, requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
        self._seen("BidiRunSession", context)
        first = True
        for raw in requests:
            message = ces_v1.BidiSessionClientMessage.deserialize(raw)
            if first:
                first = False
                continue
            if message.realtime_input.will_continue:
                continue
            if self.mode == "garbage_bidi":
                yield GARBAGE
                return
            if self.mode == "endless_stream":
                chunk = _bytes(
                    ces_v1.BidiSessionServerMessage(
                        session_output=ces_v1.SessionOutput(text="y" * 1000)
                    )
                )
                while context.is_active():
                    self.calls["streamed"] += 1
                    yield chunk
                return
            yield _bytes(
                ces_v1.BidiSessionServerMessage(
                    session_output=ces_v1.SessionOutput(text="hello", turn_completed=True)
                )
            )

    def get_app(self, data: bytes, context: grpc.ServicerContext) -> bytes:
        auth = self._seen("GetApp", context)
        if self.mode.startswith("lro_"):
            context.abort(grpc.StatusCode.NOT_FOUND, "no such app")
        if self.mode == "echo_auth_getapp":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"you sent {auth}")
        return _bytes(ces_v1.App(name=APP))

    def list_tools(self, data: bytes, context: grpc.ServicerContext) -> bytes:
        self._seen("ListTools", context)
        if self.mode == "endless_pages":
            return _bytes(ces_v1.ListToolsResponse(next_page_token="again"))
        if self.mode == "controls":
            tool = ces_v1.Tool(
                name=f"{APP}/tools/t\x1b[31m1",
                client_function=ces_v1.ClientFunction(name="evil\x1b]0;pwn\x07\u202e\x9b"),
            )
            return _bytes(ces_v1.ListToolsResponse(tools=[tool]))
        return _bytes(ces_v1.ListToolsResponse())

    def list_agents(self, data: bytes, context: grpc.ServicerContext) -> bytes:
        self._seen("ListAgents", context)
        if self.mode == "endless_pages":
            return _bytes(ces_v1.ListAgentsResponse(next_page_token="again"))
        return _bytes(ces_v1.ListAgentsResponse())

    def create_app(self, data: bytes, context: grpc.ServicerContext) -> bytes:
        self._seen("CreateApp", context)
        if self.mode == "lro_error":
            error = status_pb2.Status(code=3, message="cannot create \x1b[31mapp")
            return operations_pb2.Operation(name="operations/op1", done=True, error=error)
        return _bytes(operations_pb2.Operation(name="operations/op1", done=False))

    def get_operation(self, data: bytes, context: grpc.ServicerContext) -> bytes:
        self._seen("GetOperation", context)
        return _bytes(operations_pb2.Operation(name="operations/op1", done=False))

    def _handlers(self) -> tuple[Any, ...]:
        def unary(fn: Any) -> Any:
            def call(data: bytes, context: grpc.ServicerContext) -> bytes:
                out = fn(data, context)
                if self.mode == f"garbage_{fn.__name__}":
                    return GARBAGE
                return out if isinstance(out, bytes) else _bytes(out)

            return grpc.unary_unary_rpc_method_handler(call)

        return (
            grpc.method_handlers_generic_handler(
                f"{CES}.SessionService",
                {
                    "RunSession": unary(self.run_session),
                    "BidiRunSession": grpc.stream_stream_rpc_method_handler(self.bidi),
                },
            ),
            grpc.method_handlers_generic_handler(
                f"{CES}.AgentService",
                {
                    "GetApp": unary(self.get_app),
                    "ListTools": unary(self.list_tools),
                    "ListAgents": unary(self.list_agents),
                    "CreateApp": unary(self.create_app),
                },
            ),
            grpc.method_handlers_generic_handler(
                "google.longrunning.Operations", {"GetOperation": unary(self.get_operation)}
            ),
        )


def text_response(text: str) -> Any:
    return ces_v1.RunSessionResponse(outputs=[ces_v1.SessionOutput(text=text, turn_completed=True)])


class TokenEndpoint:
    """A token exchange endpoint (STS) on 127.0.0.1: every refresh gets a new token
    `ya29.tok-N-SECRETVALUE`, valid for one second (google.auth refreshes a token that
    expires within minutes, so before every call)."""

    def __init__(self) -> None:
        self.issued: list[str] = []
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                token = f"ya29.tok-{len(endpoint.issued) + 1}-SECRETVALUE"
                endpoint.issued.append(token)
                body = json.dumps(
                    {
                        "access_token": token,
                        "expires_in": 1,
                        "token_type": "Bearer",
                        "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                    }
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return None

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/token"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> TokenEndpoint:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(30)

    def credentials_file(self, directory: Any) -> str:
        """An external-account (workload identity federation) credentials file whose
        token exchange (STS) is this endpoint."""
        subject = directory / "subject-token.txt"
        subject.write_text("subject-token")
        path = directory / "external.json"
        path.write_text(
            json.dumps(
                {
                    "type": "external_account",
                    "audience": "//iam.googleapis.com/projects/1/locations/global/"
                    "workloadIdentityPools/pool/providers/provider",
                    "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                    "token_url": self.url,
                    "credential_source": {"file": str(subject)},
                }
            )
        )
        return str(path)
