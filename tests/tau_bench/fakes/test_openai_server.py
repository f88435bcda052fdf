"""The fake OpenAI server: real sockets, OpenAI's shapes, latency, faults, deadlines."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time

import httpx
import pytest

from tau_bench.fakes import ChatReply, ChatRequest, Faults, OpenAIServer, OpenAIServerProcess
from tau_bench.llm import LLMConfig, LLMRateLimitError, RetryPolicy, complete

HELLO = [{"role": "user", "content": "hello"}]
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
NO_WAIT = RetryPolicy(initial_wait=0.0, max_wait=0.0, jitter=0.0)


def _echo(request: ChatRequest) -> ChatReply:
    if request.tools and request.messages[-1]["role"] == "user":
        return ChatReply(tool_calls=[("lookup", {"q": request.messages[-1]["content"]})])
    return ChatReply(text=str(request.messages[-1]["content"]).upper(), usage=(11, 3))


def test_answers_in_openai_shape_with_tool_calls_and_usage() -> None:
    with OpenAIServer(_echo) as server:
        url = f"{server.base_url}/chat/completions"
        plain = httpx.post(url, json={"model": "m", "messages": HELLO}, timeout=10).json()
        tool = httpx.post(
            url, json={"model": "m", "messages": HELLO, "tools": TOOLS}, timeout=10
        ).json()
    assert plain["object"] == "chat.completion" and plain["model"] == "m"
    assert plain["choices"][0]["message"] == {"role": "assistant", "content": "HELLO"}
    assert plain["usage"] == {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    call = tool["choices"][0]["message"]["tool_calls"][0]
    assert tool["choices"][0]["finish_reason"] == "tool_calls"
    assert call["function"] == {"name": "lookup", "arguments": json.dumps({"q": "hello"})}
    assert [r.tools != [] for r in server.requests] == [False, True]


async def test_litellm_talks_to_it_over_a_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-server-0000")
    with OpenAIServer(_echo) as server:
        config = LLMConfig(model="openai/fake-model", api_base=server.base_url, retry=NO_WAIT)
        completion = await complete(config, HELLO, tools=TOOLS)
        assert completion.tool_calls[0]["function"]["name"] == "lookup"
        assert server.requests[0].model == "fake-model"
        assert server.stats() == {"requests": 1, "connections": 1}


def test_latency_is_counted_from_the_request_arrival() -> None:
    with OpenAIServer(_echo, latency=0.3) as server:
        started = time.perf_counter()
        httpx.post(f"{server.base_url}/chat/completions", json={"messages": HELLO}, timeout=10)
        elapsed = time.perf_counter() - started
    assert 0.3 <= elapsed < 3.0


def test_reply_errors_and_unknown_routes() -> None:
    def refuse(request: ChatRequest) -> ChatReply:
        return ChatReply(status=429, headers={"Retry-After": "7"}, error="slow down")

    with OpenAIServer(refuse) as server:
        answer = httpx.post(f"{server.base_url}/chat/completions", json={}, timeout=10)
        missing = httpx.get(f"{server.base_url}/models", timeout=10)
        bad = httpx.post(f"{server.base_url}/chat/completions", content=b"{not json", timeout=10)
    assert answer.status_code == 429 and answer.headers["retry-after"] == "7"
    assert answer.json()["error"]["message"] == "slow down"
    assert missing.status_code == 404 and bad.status_code == 400


def test_a_broken_reply_function_is_a_400_not_a_hang() -> None:
    def broken(request: ChatRequest) -> ChatReply:
        raise KeyError("oops")

    with OpenAIServer(broken) as server:
        answer = httpx.post(f"{server.base_url}/chat/completions", json={}, timeout=10)
    assert answer.status_code == 400 and "KeyError" in answer.json()["error"]["message"]


async def test_async_reply_functions_may_wait_for_each_other() -> None:
    """Replies held until two requests are in flight: both arrive, then both leave."""
    arrived: list[int] = []
    gate: dict[str, asyncio.Event] = {}

    async def held(request: ChatRequest) -> ChatReply:
        event = gate.setdefault("both", asyncio.Event())
        arrived.append(1)
        if len(arrived) == 2:
            event.set()
        await asyncio.wait_for(event.wait(), 10)
        return ChatReply(text="released")

    with OpenAIServer(held) as server:
        async with httpx.AsyncClient(timeout=10) as client:
            url = f"{server.base_url}/chat/completions"
            answers = await asyncio.gather(*(client.post(url, json={}) for _ in range(2)))
    assert [a.json()["choices"][0]["message"]["content"] for a in answers] == ["released"] * 2


def test_faults_are_seeded_and_carry_retry_after() -> None:
    def statuses(seed: int) -> list[int]:
        faults = Faults(rate=0.5, seed=seed)
        with OpenAIServer(_echo, faults=faults) as server, httpx.Client(timeout=10) as client:
            url = f"{server.base_url}/chat/completions"
            answers = [client.post(url, json={"messages": HELLO}) for _ in range(20)]
        assert all("retry-after" in a.headers for a in answers if a.status_code != 200)
        return [a.status_code for a in answers]

    first = statuses(1)
    assert first == statuses(1)
    assert 200 in first and any(s in (429, 500, 503) for s in first)
    with pytest.raises(ValueError):
        Faults(rate=1.5)


async def test_every_request_faulted_is_a_typed_llm_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-server-0000")
    with OpenAIServer(_echo, faults=Faults(rate=1.0, statuses=(429,))) as server:
        config = LLMConfig(
            model="openai/fake", api_base=server.base_url, retry=NO_WAIT, max_attempts=2
        )
        with pytest.raises(LLMRateLimitError) as raised:
            await complete(config, HELLO)
    assert raised.value.attempts == 2 and len(server.requests) == 2


def test_stop_is_idempotent_and_frees_the_port() -> None:
    server = OpenAIServer(_echo).start()
    url = f"{server.base_url}/chat/completions"
    server.stop()
    server.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.post(url, json={}, timeout=2)


def test_the_child_process_server_answers_and_counts() -> None:
    responder = "tau_bench.benchmarks.runner.replies:respond"
    with OpenAIServerProcess(responder, latency=0.0) as server:
        body = {"model": "m", "messages": [{"role": "system", "content": "x"}]}
        answer = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=10)
        assert answer.status_code == 200
        assert server.stats()["requests"] == 1 and server.cpu_seconds() > 0
    assert server.proc.poll() is not None


def test_the_child_entry_point_starts_without_a_warning() -> None:
    """`tau bench runner` printed runpy's "found in sys.modules" warning on every start."""
    from tau_bench.fakes.process import MODULE

    argv = [sys.executable, "-W", "error::RuntimeWarning", "-m", MODULE, "--help"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "--responder" in done.stdout and not done.stderr


def test_a_child_that_cannot_start_fails_within_its_deadline() -> None:
    with pytest.raises(RuntimeError, match="did not start"):
        OpenAIServerProcess("no.such.module:respond", timeout=60)


async def test_a_service_that_does_not_record_keeps_no_request() -> None:
    """The child-process server (`serve`) keeps no request: none could be read there."""
    from tau_bench.fakes.openai_server import _Service

    body = json.dumps({"model": "m", "messages": HELLO}).encode()
    for record in (True, False):
        service = _Service(_echo, 0.0, None, record=record)
        answer = await service.answer(
            "POST", "/v1/chat/completions", {}, body, asyncio.get_running_loop().time()
        )
        assert answer.startswith(b"HTTP/1.1 200") and b'"HELLO"' in answer
        assert service.served["requests"] == 1
        assert len(service.requests) == (1 if record else 0)


def _raw_request(body: bytes, path: str = "/v1/chat/completions") -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def _read_responses(sock: socket.socket, count: int) -> list[tuple[int, bytes]]:
    """`count` HTTP responses off `sock` (status, body), within the socket's timeout."""
    data, out = b"", []
    while len(out) < count:
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            head = data[:end].decode("latin-1").split("\r\n")
            length = next(
                int(h.split(":", 1)[1]) for h in head if h.lower().startswith("content-length")
            )
            if len(data) >= end + 4 + length:
                out.append((int(head[0].split()[1]), data[end + 4 : end + 4 + length]))
                data = data[end + 4 + length :]
                continue
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed after {len(out)} responses")
        data += chunk
    return out


def _connect(server: OpenAIServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def test_requests_sent_together_are_answered_in_order() -> None:
    first = json.dumps({"messages": [{"role": "user", "content": "one"}]}).encode()
    second = json.dumps({"messages": [{"role": "user", "content": "two"}]}).encode()
    with OpenAIServer(_echo, latency=0.05) as server, _connect(server) as sock:
        sock.sendall(_raw_request(first) + _raw_request(second))  # one write, two requests
        answers = _read_responses(sock, 2)
        assert server.stats() == {"requests": 2, "connections": 1}
    contents = [json.loads(b)["choices"][0]["message"]["content"] for _, b in answers]
    assert [s for s, _ in answers] == [200, 200] and contents == ["ONE", "TWO"]


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: many\r\n\r\n", 400),
        (b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n", 413),
        (b"POST /v1/chat/completions HTTP/1.1\r\nX-Pad: " + b"a" * 70_000, 431),
    ],
)
def test_malformed_requests_get_an_error_and_the_connection_closes(
    request_bytes: bytes, status: int
) -> None:
    with OpenAIServer(_echo) as server:
        with _connect(server) as sock:
            sock.sendall(request_bytes)
            assert _read_responses(sock, 1)[0][0] == status
            assert sock.recv(1) == b""  # closed by the server, not left waiting
        # ...and the server goes on serving others.
        answer = httpx.post(f"{server.base_url}/chat/completions", json={"messages": HELLO})
        assert answer.status_code == 200


def test_a_silent_connection_is_closed_after_the_read_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tau_bench.fakes import openai_server

    monkeypatch.setattr(openai_server, "READ_DEADLINE", 0.3)
    with OpenAIServer(_echo) as server, _connect(server) as sock:
        body = json.dumps({"messages": HELLO}).encode()
        sock.sendall(_raw_request(body))
        assert _read_responses(sock, 1)[0][0] == 200
        started = time.perf_counter()
        assert sock.recv(1) == b""  # the socket's own 10 s timeout bounds this wait
        assert time.perf_counter() - started < 5


def test_a_client_gone_before_its_answer_leaves_the_server_serving() -> None:
    with OpenAIServer(_echo, latency=0.3) as server:
        with _connect(server) as sock:
            sock.sendall(_raw_request(json.dumps({"messages": HELLO}).encode()))
        answer = httpx.post(f"{server.base_url}/chat/completions", json={"messages": HELLO})
        assert answer.status_code == 200
        assert server.stats()["requests"] == 1  # the abandoned answer was never sent
