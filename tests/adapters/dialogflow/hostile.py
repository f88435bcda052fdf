"""A misbehaving Dialogflow CX service for tests: a real gRPC server on 127.0.0.1 (plain,
TLS with a throw-away certificate, or local credentials) whose answers a test picks by
`mode`, and a local OAuth token endpoint handing out a new access token per request."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
from google.cloud import dialogflowcx_v3beta1 as cx
from google.rpc import status_pb2

from tests.certificates import write_self_signed

DF = "google.cloud.dialogflow.cx.v3beta1"
AGENT = "projects/p/locations/global/agents/a"
GARBAGE = b"\xff\xfe\xfd not a protobuf message"  # mode "garbage": every method's answer
# Status details trailers api_core fails on: not a google.rpc.Status (DecodeError), and a
# Status whose code differs from the call's (ValueError).
BAD_DETAILS = {
    "garbage_details": b"\xff\xfe garbage",
    "mismatched_details": status_pb2.Status(code=3, message="other").SerializeToString(),
}
CONTROL = "bad \x1b[31mRED\x1b]0;title\x07 \x9b31m \u202eevil"


def _bytes(message: Any) -> bytes:
    return bytes(type(message).pb(message).SerializeToString())


def _text_reply(*texts: str) -> Any:
    return cx.DetectIntentResponse(
        response_id="r1",
        query_result=cx.QueryResult(
            response_messages=[cx.ResponseMessage(text=cx.ResponseMessage.Text(text=list(texts)))]
        ),
    )


class HostileService:
    """The gRPC server, in its own thread and loop (usable from sync and async tests)."""

    def __init__(self, mode: str, *, security: str = "plain", cert_dir: Path | None = None):
        self.mode = mode
        self.security = security
        self.cert_dir = cert_dir
        self.calls: dict[str, int] = {}
        self.tokens_seen: list[str] = []  # bearer tokens of the requests, as received
        self.address = ""
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _count(self, method: str, context: Any) -> str:
        """Count the call; its authorization header."""
        self.calls[method] = self.calls.get(method, 0) + 1
        auth = str(dict(context.invocation_metadata()).get("authorization", ""))
        token = auth.partition(" ")[2]
        if token and token not in self.tokens_seen:
            self.tokens_seen.append(token)
        return auth

    async def _detect(self, request: bytes, context: Any) -> bytes:
        auth = self._count("DetectIntent", context)
        mode = self.mode
        if mode in ("garbage", "garbage_detect"):  # garbage_detect: DetectIntent only
            return GARBAGE
        if mode in BAD_DETAILS:  # UNAVAILABLE whose status details api_core cannot read
            details = (("grpc-status-details-bin", BAD_DETAILS[mode]),)
            await context.abort(grpc.StatusCode.UNAVAILABLE, "try later", details)
        if mode == "big_metadata":  # a status message over gRPC's metadata limit
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "E" * 100_000)
        if mode == "echo_text":
            return _bytes(_text_reply(f"your token is {auth}"))
        if mode == "echo_error":
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"you sent {auth}")
        if mode == "control_error":
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, CONTROL)
        if mode == "control_text":
            return _bytes(_text_reply(CONTROL))
        if mode == "huge":
            return _bytes(_text_reply("x" * (2 << 20)))  # 2 MiB
        if mode == "nan_payload":
            reply = _text_reply("hello")
            extra = type(reply).pb(reply).query_result.response_messages.add()
            extra.payload.fields["v"].number_value = float("nan")
            extra.payload.fields["w"].list_value.values.add().number_value = float("inf")
            return _bytes(reply)
        if mode == "nan_args":
            reply = cx.DetectIntentResponse(response_id="r1")
            message = type(reply).pb(reply).query_result.response_messages.add()
            message.tool_call.tool = f"{AGENT}/tools/t1"
            message.tool_call.action = "calculate"
            message.tool_call.input_parameters.fields["expression"].number_value = float("nan")
            return _bytes(reply)
        return _bytes(_text_reply("hello"))

    async def _list_tools(self, request: bytes, context: Any) -> bytes:
        auth = self._count("ListTools", context)
        if self.mode == "garbage":
            return GARBAGE
        if self.mode == "echo_list_error":
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"bad request; you sent {auth}")
        if self.mode == "endless_pages":
            return _bytes(cx.ListToolsResponse(tools=[], next_page_token="again"))
        if self.mode == "control_names":
            tool = cx.Tool(name=f"{AGENT}/tools/t1", display_name=CONTROL)
            tool.function_spec = cx.Tool.FunctionTool()
            return _bytes(cx.ListToolsResponse(tools=[tool]))
        return _bytes(cx.ListToolsResponse(tools=[]))

    async def _get_agent(self, request: bytes, context: Any) -> bytes:
        self._count("GetAgent", context)
        if self.mode == "garbage":
            return GARBAGE
        return _bytes(cx.Agent(name=AGENT, start_playbook=f"{AGENT}/playbooks/start"))

    async def _list_playbooks(self, request: bytes, context: Any) -> bytes:
        self._count("ListPlaybooks", context)
        if self.mode == "endless_pages":
            return _bytes(cx.ListPlaybooksResponse(playbooks=[], next_page_token="again"))
        return _bytes(cx.ListPlaybooksResponse(playbooks=[]))

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())

    async def _main(self) -> None:
        def unary(fn: Any) -> Any:
            return grpc.unary_unary_rpc_method_handler(fn)

        server = grpc.aio.server()
        server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    f"{DF}.Sessions", {"DetectIntent": unary(self._detect)}
                ),
                grpc.method_handlers_generic_handler(
                    f"{DF}.Tools", {"ListTools": unary(self._list_tools)}
                ),
                grpc.method_handlers_generic_handler(
                    f"{DF}.Agents", {"GetAgent": unary(self._get_agent)}
                ),
                grpc.method_handlers_generic_handler(
                    f"{DF}.Playbooks", {"ListPlaybooks": unary(self._list_playbooks)}
                ),
            )
        )
        if self.security == "tls":
            assert self.cert_dir is not None
            pair = (
                (self.cert_dir / "key.pem").read_bytes(),
                (self.cert_dir / "cert.pem").read_bytes(),
            )
            port = server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials([pair]))
        elif self.security == "local":
            creds = grpc.local_server_credentials(grpc.LocalConnectionType.LOCAL_TCP)
            port = server.add_secure_port("127.0.0.1:0", creds)
        else:
            port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        self.address = f"127.0.0.1:{port}"
        self._stop = asyncio.Event()
        self._ready.set()
        await self._stop.wait()
        await server.stop(grace=0.5)

    def __enter__(self) -> HostileService:
        self._thread.start()
        if not self._ready.wait(timeout=30):
            raise RuntimeError("the test server did not start")
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=30)
        self._loop.close()


class TokenEndpoint:
    """An OAuth token endpoint: every request gets a new access token, `issued` lists
    them. `expires_in=1` makes google.auth refresh before every call."""

    def __init__(self, expires_in: int = 3600) -> None:
        self.issued: list[str] = []
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                token = f"AccTok-{len(endpoint.issued):04d}-k9Zq"
                endpoint.issued.append(token)
                body = json.dumps(
                    {"access_token": token, "expires_in": expires_in, "token_type": "Bearer"}
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/token"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> TokenEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=30)

    def credentials(self) -> Any:
        """ADC-style user credentials refreshing against this endpoint (google.auth
        ignores a token_uri read from a user-credentials file, so they are built here)."""
        from google.oauth2.credentials import Credentials

        return Credentials(
            token=None,
            refresh_token="refresh-token-value",
            token_uri=self.url,
            client_id="client-id",
            client_secret="client-secret-value",
        )


def service_account_file(path: Path) -> Path:
    """A service-account key file with a fresh RSA key (requests carry a self-signed JWT
    made from it: no token endpoint is asked)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    path.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": "p",
                "private_key_id": "key-1",
                "private_key": pem,
                "client_email": "tester@p.iam.gserviceaccount.com",
                "client_id": "1",
                "token_uri": "http://127.0.0.1:9/token",
            }
        )
    )
    return path


def write_certificate(directory: Path) -> Path:
    """A self-signed certificate for 127.0.0.1 (cert.pem, key.pem) in `directory`."""
    return write_self_signed(directory)[0]


@contextmanager
def serving(mode: str, **kwargs: Any) -> Iterator[HostileService]:
    with HostileService(mode, **kwargs) as service:
        yield service
