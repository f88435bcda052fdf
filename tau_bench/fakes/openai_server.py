"""The one fake OpenAI-compatible chat-completions server, for tests and benchmarks.

A real HTTP/1.1 server on 127.0.0.1 (an ephemeral port) that litellm, the openai SDK or any
HTTP client reaches over a socket, as it would reach vLLM or a gateway:

- `POST .../chat/completions` answers in OpenAI's shape (tool calls, usage); what it says
  is decided by a reply function computed from the request (`Responder`, sync or async);
- every answer leaves `latency` seconds after its request arrived (the model's time);
- `Faults` turns a seeded share of requests into 429/5xx answers with `Retry-After`;
- `GET .../stats` returns the requests answered and the connections accepted so far.

Every wait has a deadline: start-up, reading a request, computing a reply, shutdown.

Two ways to run it: `OpenAIServer` in a thread of this process (tests, the SDG benchmark),
and `OpenAIServerProcess` in a child process, so that its CPU is not the measured
process's (`tau bench runner`): `python -m tau_bench.fakes --responder
module:function --latency 0.2` prints `PORT <n>` once it listens.

An asyncio protocol rather than a web framework (or even asyncio streams): at 1000+
requests/s on a shared 2-core machine, the server's per-request CPU is taken from the
runner it measures.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import random
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from tau_bench.json_decode import loads

HOST = "127.0.0.1"
START_DEADLINE = 30.0  # seconds to start listening
STOP_DEADLINE = 10.0  # seconds to stop
READ_DEADLINE = 300.0  # seconds a keep-alive connection may stay silent
REPLY_DEADLINE = 120.0  # seconds a reply function may take before a 504


@dataclass
class ChatRequest:
    """One chat-completions request as the reply function sees it."""

    body: dict[str, Any]
    path: str = "/v1/chat/completions"
    headers: dict[str, str] = field(default_factory=dict)
    base_url: str = ""

    @property
    def model(self) -> str:
        return str(self.body.get("model") or "fake")

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools") or [])

    @property
    def url(self) -> str:
        return self.base_url + self.path


@dataclass
class ChatReply:
    """What the fake model answers: text and/or tool calls, or an HTTP error.

    Tool calls are `(name, arguments)`; arguments that are a string are sent raw (to test
    malformed JSON). `usage` is `(prompt_tokens, completion_tokens)`, estimated when None.
    `delay`, when set, replaces the server's latency for this reply.
    """

    text: str | None = None
    tool_calls: list[tuple[str, Any]] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    error: str = "error"
    usage: tuple[int, int] | None = None
    delay: float | None = None


Responder = Callable[[ChatRequest], "ChatReply | Awaitable[ChatReply]"]


@dataclass(frozen=True)
class Faults:
    """A seeded share (`rate`) of requests answered with one of `statuses` instead."""

    rate: float = 0.0
    statuses: tuple[int, ...] = (429, 500, 503)
    retry_after: float | None = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"fault rate must be between 0 and 1, got {self.rate}")


def tokens(text: str) -> int:
    """A rough token count (4 characters a token), at least 1."""
    return max(1, len(text) // 4)


def completion_body(reply: ChatReply, request: ChatRequest, number: int) -> dict[str, Any]:
    """The JSON of a successful answer, in OpenAI's chat-completion shape."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{number}_{i}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for i, (name, args) in enumerate(reply.tool_calls)
        ]
    prompt, completion = reply.usage or (
        tokens(json.dumps(request.body)),
        tokens((reply.text or "") + json.dumps(reply.tool_calls)),
    )
    return {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion",
        "created": 1700000000,
        "model": request.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def error_body(reply: ChatReply) -> dict[str, Any]:
    """The JSON of an error answer, in OpenAI's error shape."""
    return {"error": {"message": reply.error, "type": "fake_error", "code": reply.status}}


_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests"}


def _response(status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> bytes:
    body = json.dumps(payload).encode()
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}", "Content-Type: application/json"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


MAX_HEAD = 64 * 1024  # bytes of request line and headers
MAX_BODY = 32 * 1024 * 1024  # bytes of a request body


def _head(head: bytes) -> tuple[str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = [*lines[0].split(" ", 2), "", ""][:3]
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    return method, path, headers


class _Service:
    """The protocol and the bookkeeping, on whichever event loop runs it."""

    def __init__(
        self, respond: Responder, latency: float, faults: Faults | None, record: bool = True
    ) -> None:
        if latency < 0:
            raise ValueError(f"latency must not be negative, got {latency}")
        self.respond = respond
        self.latency = latency
        self.faults = faults
        self.rng = random.Random(faults.seed if faults else 0)
        self.numbers = itertools.count(1)
        self.served = {"requests": 0, "connections": 0}
        self.requests: list[ChatRequest] = []  # every request, when `record`
        self.record = record
        self.base_url = ""
        self.connections: set[_Connection] = set()

    def route(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> bytes | tuple[ChatRequest, int, ChatReply | Awaitable[Any]]:
        """An answer that leaves at once (stats, errors), or the request, its number
        and its reply (or the reply function's awaitable)."""
        if method == "GET" and path.endswith("/stats"):
            return _response(200, dict(self.served))
        if method != "POST" or not path.endswith("/chat/completions"):
            return _response(404, {"error": {"message": f"no route {method} {path}"}})
        try:
            parsed = loads(body or b"{}")
        except ValueError:
            return _response(400, {"error": {"message": "request body is not JSON"}})
        if not isinstance(parsed, dict):
            return _response(400, {"error": {"message": "request body is not a JSON object"}})
        request = ChatRequest(parsed, path, headers, self.base_url)
        if self.record:
            self.requests.append(request)
        number = next(self.numbers)
        return request, number, self._fault() or self._call(request)

    def render(self, request: ChatRequest, number: int, reply: ChatReply) -> tuple[float, bytes]:
        """The reply's delay and its HTTP response."""
        delay = self.latency if reply.delay is None else reply.delay
        if reply.status != 200:
            return delay, _response(reply.status, error_body(reply), reply.headers)
        return delay, _response(200, completion_body(reply, request, number), reply.headers)

    async def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes, arrived: float
    ) -> bytes:
        """The whole answer to one request, sent `latency` after `arrived`."""
        routed = self.route(method, path, headers, body)
        if isinstance(routed, bytes):
            return routed
        request, number, outcome = routed
        reply = outcome if isinstance(outcome, ChatReply) else await self.settle(outcome)
        delay, response = self.render(request, number, reply)
        await asyncio.sleep(max(0.0, arrived + delay - asyncio.get_running_loop().time()))
        self.served["requests"] += 1
        return response

    def _fault(self) -> ChatReply | None:
        faults = self.faults
        if faults is None or faults.rate <= 0 or self.rng.random() >= faults.rate:
            return None
        status = self.rng.choice(faults.statuses)
        headers = {} if faults.retry_after is None else {"Retry-After": str(faults.retry_after)}
        return ChatReply(status=status, headers=headers, error=f"injected fault {status}")

    def _call(self, request: ChatRequest) -> ChatReply | Awaitable[Any]:
        try:
            outcome = self.respond(request)
        except Exception as exc:  # a broken reply function must fail loudly, not retry
            return ChatReply(status=400, error=f"reply function failed: {type(exc).__name__}")
        return outcome if inspect.isawaitable(outcome) else _checked(outcome)

    async def settle(self, outcome: Awaitable[Any]) -> ChatReply:
        """An async reply function's reply, within its deadline."""
        try:
            return _checked(await asyncio.wait_for(outcome, REPLY_DEADLINE))
        except TimeoutError:
            return ChatReply(status=504, error="the fake model's reply function timed out")
        except Exception as exc:
            return ChatReply(status=400, error=f"reply function failed: {type(exc).__name__}")


def _checked(outcome: Any) -> ChatReply:
    if not isinstance(outcome, ChatReply):
        return ChatReply(status=400, error=f"reply function returned {type(outcome)}")
    return outcome


class _Connection(asyncio.Protocol):
    """One keep-alive connection: requests answered one at a time, in order.

    A protocol rather than a stream handler: a sync reply function's answer is computed
    as the request arrives and sent by a timer at `arrived + latency`, so a request
    costs a parse, a reply and a write - no task, no wake-ups (at 1000 requests/s on
    2 cores, the server's CPU is the benchmark's)."""

    def __init__(self, service: _Service) -> None:
        self.service = service
        self.loop = asyncio.get_running_loop()
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.busy = False  # a request is being answered: later ones wait in `buffer`
        self.last = self.loop.time()  # the last activity (the read deadline)
        self.pending: asyncio.TimerHandle | asyncio.Task[None] | None = None
        self.idle: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.service.served["connections"] += 1
        self.service.connections.add(self)
        self.idle = self.loop.call_later(READ_DEADLINE, self._check_idle)

    def connection_lost(self, exc: Exception | None) -> None:
        self.service.connections.discard(self)
        for handle in (self.pending, self.idle):
            if handle is not None:
                handle.cancel()
        self.transport = None

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def _check_idle(self) -> None:
        """Close a connection silent for READ_DEADLINE (re-armed while it is not)."""
        quiet = self.loop.time() - self.last
        if self.busy or quiet < READ_DEADLINE:
            wait = READ_DEADLINE if self.busy else READ_DEADLINE - quiet
            self.idle = self.loop.call_later(wait, self._check_idle)
        else:
            self.close()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self.last = self.loop.time()
        if not self.busy:
            self._next()

    def _next(self) -> None:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > MAX_HEAD:
                self._refuse(431, "request headers too large")
            return
        method, path, headers = _head(bytes(self.buffer[:end]))
        try:
            length = int(headers.get("content-length") or 0)
        except ValueError:
            self._refuse(400, "bad Content-Length")
            return
        if not 0 <= length <= MAX_BODY:
            self._refuse(413, "request body too large")
            return
        total = end + 4 + length
        if len(self.buffer) < total:
            return
        body = bytes(self.buffer[end + 4 : total])
        del self.buffer[:total]
        # The answer leaves `latency` after the request arrived: parsing it is part of
        # the model's time, as it would be for a real server.
        arrived = self.loop.time()
        self.busy = True
        routed = self.service.route(method, path, headers, body)
        if isinstance(routed, bytes):
            self._send(routed, counted=False)
            return
        request, number, outcome = routed
        if isinstance(outcome, ChatReply):
            self._at(arrived, *self.service.render(request, number, outcome))
        else:
            self.pending = self.loop.create_task(self._later(arrived, request, number, outcome))

    async def _later(
        self, arrived: float, request: ChatRequest, number: int, outcome: Awaitable[Any]
    ) -> None:
        reply = await self.service.settle(outcome)
        self._at(arrived, *self.service.render(request, number, reply))

    def _at(self, arrived: float, delay: float, response: bytes) -> None:
        self.pending = self.loop.call_at(arrived + delay, self._send, response)

    def _send(self, response: bytes, counted: bool = True) -> None:
        self.pending = None
        if self.transport is None or self.transport.is_closing():
            return
        if counted:  # before the write: a client holding its answer finds it counted
            self.service.served["requests"] += 1
        self.transport.write(response)
        self.busy = False
        self.last = self.loop.time()
        if self.buffer:
            self._next()

    def _refuse(self, status: int, message: str) -> None:
        if self.transport is not None:
            self.transport.write(_response(status, {"error": {"message": message}}))
            self.transport.close()


class OpenAIServer:
    """The fake server in a background thread with its own event loop.

        with OpenAIServer(lambda request: ChatReply(text="hi"), latency=0.1) as server:
            complete(LLMConfig("openai/fake", api_base=server.base_url), messages)

    `requests` lists what was asked; `stats()` counts answers and connections.
    """

    def __init__(
        self, respond: Responder, *, latency: float = 0.0, faults: Faults | None = None
    ) -> None:
        self._service = _Service(respond, latency, faults)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (`.../v1`), as `--api-base` takes it."""
        return f"http://{HOST}:{self.port}/v1"

    @property
    def requests(self) -> list[ChatRequest]:
        return self._service.requests

    def stats(self) -> dict[str, int]:
        return dict(self._service.served)

    def start(self, timeout: float = START_DEADLINE) -> OpenAIServer:
        """Listen on an ephemeral port; returns once connections are accepted."""
        if self._thread is not None:
            raise RuntimeError("the server is already started")
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="fake-openai", daemon=True)
        self._thread.start()

        async def listen() -> asyncio.Server:
            return await listen_on(self._service)

        try:
            server = asyncio.run_coroutine_threadsafe(listen(), loop).result(timeout)
        except BaseException:
            self.stop()
            raise
        self._server = server
        self.port = int(server.sockets[0].getsockname()[1])
        self._service.base_url = f"http://{HOST}:{self.port}"
        return self

    def stop(self, timeout: float = STOP_DEADLINE) -> None:
        """Close the socket and every connection, stop the thread (idempotent)."""
        loop, thread, server = self._loop, self._thread, self._server
        self._loop = self._thread = self._server = None
        if loop is None or thread is None:
            return

        async def shutdown() -> None:
            if server is not None:
                server.close()
            for connection in list(self._service.connections):
                connection.close()
            current = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not current]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(shutdown(), loop).result(timeout)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
            if not thread.is_alive():
                loop.close()

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


async def serve(respond: Responder, latency: float, faults: Faults | None = None) -> None:
    """Serve on this event loop until cancelled; print `PORT <n>` once listening.

    For a server in its own process (`OpenAIServerProcess`): requests are not kept (no
    one could read them; at 1000 requests/s the parsed bodies would grow the heap, and
    the collector's passes over it, without bound) and the objects of its start-up are
    frozen out of the collector's passes."""
    import gc

    service = _Service(respond, latency, faults, record=False)
    gc.collect()
    gc.freeze()
    server = await listen_on(service)
    port = int(server.sockets[0].getsockname()[1])
    service.base_url = f"http://{HOST}:{port}"
    print(f"PORT {port}", flush=True)
    async with server:
        await server.serve_forever()


async def listen_on(service: _Service) -> asyncio.Server:
    """Listen for `service` on an ephemeral port of 127.0.0.1."""
    loop = asyncio.get_running_loop()
    return await loop.create_server(lambda: _Connection(service), HOST, 0, backlog=4096)


def load_responder(spec: str) -> Responder:
    """`"package.module:function"` -> that function (the child process's reply function)."""
    import importlib

    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"responder must be module:function, got {spec!r}")
    target = getattr(importlib.import_module(module_name), attr)
    if not callable(target):
        raise ValueError(f"{spec} is not callable")
    return target  # type: ignore[no-any-return]
