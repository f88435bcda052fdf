"""Runner benchmark: how close does `tau run` get to the latency bound of its model calls?

A mock OpenAI-compatible server (raw asyncio HTTP/1.1, in a child process so it does
not share the runner's event loop) answers /v1/chat/completions a fixed latency after
each request arrives, with scripted turns: the agent (requests that carry `tools`) calls
one tool, then talks; the user greets, thanks, then sends ###STOP###. That is 6
sequential model calls per episode. The real tool-calling agent and LLM user
(`tau_bench.llm`, litellm) are pointed at it with `api_base`, and N airline episodes run
at each concurrency level through `tau run`'s runner (results files written and
fsynced as usual).

The bound is calls/episode x latency x episodes / concurrency (no runner can beat it);
with identical episodes the last wave cannot be shared, so the "wave bound"
ceil(episodes / concurrency) x calls/episode x latency is reported too.

    python -m tau_bench.benchmarks.runner                    # levels 1:20, 50:500, 200:500
    python -m tau_bench.benchmarks.runner --levels 200:500 --stack litellm
    tau bench runner --episodes 100
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_LEVELS = [(1, 20), (50, 500), (200, 500)]
DEFAULT_LATENCY = 0.2
DEFAULT_MODEL = "openai/gpt-4o-mini"  # a priced model: cost is computed as in real runs
STACKS = ("litellm", "raw")
ALL_STACKS = ("litellm", "litellm-sdk", "raw")
STACK_HELP = {
    "litellm": "the real tool-calling agent and LLM user through tau_bench.llm",
    "litellm-sdk": "the same, with litellm's openai-SDK route and its default clients "
    "(how tau_bench.llm called OpenAI-compatible servers before)",
    "raw": "a minimal agent and user on bare asyncio connections: the runner's own cost",
}
SERVER_MODULE = "tau_bench.benchmarks.runner"  # not __name__: that is "__main__" under -m
USER_LINES = ["Hi, I would like to check my profile.", "No, that is all. Thank you!"]

# -- the mock server (child process) ---------------------------------------------------------


def _agent_reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
    if messages[-1].get("role") == "tool":
        return {"role": "assistant", "content": "I found your profile. Anything else?"}
    if not any(m.get("role") == "tool" for m in messages):
        call = {
            "id": f"call_{len(messages)}",
            "type": "function",
            "function": {
                "name": "get_user_details",
                "arguments": json.dumps({"user_id": "mia_li_3668"}),
            },
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"role": "assistant", "content": "You are all set. Goodbye!"}


def _user_reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
    said = sum(1 for m in messages if m.get("role") == "assistant")
    text = USER_LINES[said] if said < len(USER_LINES) else "###STOP###"
    return {"role": "assistant", "content": text}


def _completion(model: str, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    }


def _respond(status: str, payload: bytes) -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    )
    return head.encode() + payload


def serve(latency: float) -> None:
    """Run the mock server on an ephemeral 127.0.0.1 port; print `PORT <n>` when ready.

    Raw asyncio HTTP/1.1 with keep-alive (uvicorn + starlette spent ~0.7 ms of CPU per
    request, which at 1000 requests/s on a shared 2-core machine is itself a bottleneck).
    `GET /stats` returns the requests answered and the connections accepted so far.
    """
    served = {"requests": 0, "connections": 0}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        served["connections"] += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                # The answer leaves `latency` after the request arrived: parsing it is
                # part of the model's time, as it would be for a real server.
                due = loop.time() + latency
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                body = await reader.readexactly(length) if length else b""
                if path.endswith("/stats"):
                    writer.write(_respond("200 OK", json.dumps(served).encode()))
                    continue
                if method != "POST" or not path.endswith("/chat/completions"):
                    writer.write(_respond("404 Not Found", b'{"error": "not found"}'))
                    continue
                request = json.loads(body)
                messages = request.get("messages") or []
                agent = bool(request.get("tools"))
                reply = _agent_reply(messages) if agent else _user_reply(messages)
                payload = json.dumps(_completion(str(request.get("model", "mock")), reply))
                await asyncio.sleep(max(0.0, due - loop.time()))
                served["requests"] += 1
                writer.write(_respond("200 OK", payload.encode()))
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
        print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


class MockServer:
    """The mock server as a child process (started and stopped by us, by pid)."""

    def __init__(self, latency: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", SERVER_MODULE, "--serve", "--latency", str(latency)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"mock server did not start (got {line!r})")
        self.port = int(line.split()[1])
        self.base = f"http://127.0.0.1:{self.port}"

    def cpu_seconds(self) -> float:
        import psutil

        times = psutil.Process(self.proc.pid).cpu_times()
        return float(times.user + times.system)

    def stats(self) -> dict[str, int]:
        import httpx

        return dict(httpx.get(f"{self.base}/stats", timeout=10).json())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


# -- the "raw" stack: the runner without a model client --------------------------------------


class LeanConnection:
    """One keep-alive HTTP/1.1 connection on asyncio streams: just enough client for
    the mock server (JSON POST, Content-Length responses)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        payload = json.dumps(body).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
        )
        self.writer.write(head.encode() + payload)
        headers = await self.reader.readuntil(b"\r\n\r\n")
        status = int(headers.split(b" ", 2)[1])
        length = 0
        for line in headers.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        data = await self.reader.readexactly(length)
        if status != 200:
            raise RuntimeError(f"mock server answered {status}")
        return dict(json.loads(data))

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


class RawStack:
    """A minimal agent and user on bare asyncio connections to the mock server: the
    runner, loop, env, scoring and logging without a model client's cost."""

    path = "/v1/chat/completions"

    def __init__(self, base: str) -> None:
        host, _, port = base.removeprefix("http://").partition(":")
        self.host, self.port = host, int(port)

    async def post(self, conn: LeanConnection, body: dict[str, Any]) -> dict[str, Any]:
        reply = await conn.post_json(self.path, body)
        return dict(reply["choices"][0]["message"])

    def connection(self) -> LeanConnection:
        return LeanConnection(self.host, self.port)

    def provider(self) -> Any:
        from tau_adapters.registry import SimpleProvider

        return SimpleProvider(lambda: RawAgent(self))

    def user(self) -> Any:
        return RawUser(self)


class RawAgent:
    def __init__(self, stack: RawStack) -> None:
        self.stack = stack
        self.conn = stack.connection()
        self.messages: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []

    async def start(self, session: Any) -> None:
        self.tools = session.tools
        self.messages = [{"role": "system", "content": session.policy}]

    async def send(self, turn: Any) -> Any:
        from tau_adapters.protocol import AgentTurn, ToolCall, UserTurn

        if isinstance(turn, UserTurn):
            self.messages.append({"role": "user", "content": turn.text})
        else:
            for r in turn.results:
                self.messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": r.call_id,
                        "name": r.name,
                        "content": r.content,
                    }
                )
        body = {"model": "raw-agent", "messages": self.messages, "tools": self.tools}
        message = await self.stack.post(self.conn, body)
        self.messages.append(message)
        calls = [
            ToolCall(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in message.get("tool_calls") or []
        ]
        text = message.get("content") or ""
        return AgentTurn(messages=[text] if text else [], tool_calls=calls)

    async def close(self) -> None:
        await self.conn.close()


class RawUser:
    def __init__(self, stack: RawStack) -> None:
        from tau_adapters.protocol import Usage

        self.stack = stack
        self.conn = stack.connection()
        self.messages: list[dict[str, Any]] = []
        self._usage = Usage()

    @property
    def usage(self) -> Any:
        return self._usage

    async def start(self, instruction: str) -> str:
        self.messages = [{"role": "system", "content": instruction}]
        return await self.reply("Hi! How can I help you today?")

    async def reply(self, agent_message: str) -> str:
        self.messages.append({"role": "user", "content": agent_message})
        body = {"model": "raw-user", "messages": self.messages}
        message = await self.stack.post(self.conn, body)
        text = str(message["content"])
        self.messages.append({"role": "assistant", "content": text})
        if "###STOP###" in text:  # the user's last turn: nothing else will be sent
            await self.conn.close()
        return text


# -- measuring -------------------------------------------------------------------------------


class PeakRSS:
    """Samples this process's resident memory every 20 ms in a thread; with `workers`,
    plus that of its `tau run --workers` processes (spawned multiprocessing children)."""

    def __init__(self, workers: bool = False) -> None:
        import psutil

        self._proc = psutil.Process()
        self._workers = workers
        self._is_worker: dict[int, bool] = {}
        self.peak = self._proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _rss(self) -> int:
        import psutil

        total = int(self._proc.memory_info().rss)
        if not self._workers:
            return total
        for child in self._proc.children():
            try:
                if child.pid not in self._is_worker:
                    self._is_worker[child.pid] = "spawn_main" in " ".join(child.cmdline())
                if self._is_worker[child.pid]:
                    total += child.memory_info().rss
            except psutil.Error:
                continue  # exited meanwhile
        return total

    def _loop(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self._rss())

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())


@contextlib.contextmanager
def _openai_route(stack: str) -> Iterator[None]:
    """Select litellm's route for OpenAI calls for one level (read by litellm per call)."""
    from tau_bench.llm import OPENAI_HANDLER_ENV

    before = os.environ.get(OPENAI_HANDLER_ENV)
    os.environ[OPENAI_HANDLER_ENV] = "False" if stack == "litellm-sdk" else "True"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(OPENAI_HANDLER_ENV, None)
        else:
            os.environ[OPENAI_HANDLER_ENV] = before


def _tasks_file(directory: Path, env: str, data_dir: str | None, episodes: int) -> Path:
    """`episodes` copies of one task, so any N runs as N distinct task ids, one trial."""
    from tau_bench.domains import load_domain

    task = load_domain(env, data_dir).tasks("test")[0].model_dump(mode="json")
    path = directory / f"tasks_{episodes}.json"
    path.write_text(json.dumps([task] * episodes))
    return path


def _progress_observer() -> Any:
    """The CLI's progress bar, drawing into a throwaway terminal (its cost, not its look)."""
    from rich.console import Console

    from tau_bench.cli.run_cmd import RichProgress

    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    return RichProgress(console, enabled=True)


@dataclass(frozen=True)
class Setup:
    """What every measured run shares: the mock server, the domain, where files go."""

    base: str
    env: str = "airline"
    data_dir: str | None = None
    workdir: str = "."
    model: str = DEFAULT_MODEL
    progress: bool = False
    workers: int = 1  # `tau run --workers` (not for the raw stack: its clients are injected)


def _measure(setup: Setup, stack: str, concurrency: int, episodes: int) -> dict[str, Any]:
    """Run `episodes` episodes at `concurrency` in this process; wall, CPU and memory."""
    from tau_bench.config import RunConfig
    from tau_bench.llm import aclose_clients, client_counts
    from tau_bench.runner import Runner, prepare_run

    api_base = f"{setup.base}/v1"
    config = RunConfig(
        env=setup.env,
        agent_strategy="tool-calling",
        model=setup.model,
        api_base=api_base,
        user_strategy="llm",
        user_model=setup.model,
        user_api_base=api_base,
        tasks_file=str(_tasks_file(Path(setup.workdir), setup.env, setup.data_dir, episodes)),
        max_concurrency=concurrency,
        workers=setup.workers,
        data_dir=setup.data_dir,
        log_dir=setup.workdir,
        run_name=f"bench_{stack}_c{concurrency}_n{episodes}_{os.getpid()}_{time.monotonic_ns()}",
        quiet=True,
    )
    plan = prepare_run(config)
    observer = _progress_observer() if setup.progress else None
    clients: dict[str, int] = {}

    async def go() -> Any:
        if stack == "raw":
            raw = RawStack(setup.base)
            runner = Runner(plan, observer, provider=raw.provider(), user_factory=raw.user)
        else:
            runner = Runner(plan, observer)
        try:
            return await runner.run()
        finally:
            clients.update(client_counts())
            await aclose_clients()

    with _openai_route(stack), PeakRSS(workers=setup.workers > 1) as rss:
        cpu0 = time.process_time() + _children_cpu()
        t0 = time.perf_counter()
        outcome = asyncio.run(go())
        wall = time.perf_counter() - t0
        # The workers have been reaped by now: their CPU is in the children's usage.
        cpu = time.process_time() + _children_cpu() - cpu0
    summary = outcome.summary
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_rss_mb": rss.peak / 2**20,
        "http_clients": sum(clients.values()),
        "agent_turn_p50_s": summary["latency"]["agent_turn"]["p50"],
        "agent_turn_p95_s": summary["latency"]["agent_turn"]["p95"],
        "errors": summary["errors"],
        "error_kinds": summary["error_kinds"],
        "avg_reward": summary["avg_reward"],
    }


def _children_cpu() -> float:
    """CPU seconds of this process's reaped children (`tau run --workers` processes; the
    mock server is still running, so not counted)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _worker(
    setup: Setup, stack: str, concurrency: int, episodes: int, ready: Any, start: Any, out: Any
) -> None:
    """One process of a multi-process level: warm up, wait for the start, run, report."""
    try:
        _measure(setup, stack, 1, 1)
        ready.put(None)
        start.wait()
        out.put(_measure(setup, stack, concurrency, episodes))
    except BaseException as exc:
        ready.put(f"{type(exc).__name__}: {exc}")
        out.put({"error": f"{type(exc).__name__}: {exc}"})
        raise


def _measure_in_processes(
    server: MockServer, setup: Setup, stack: str, concurrency: int, episodes: int, processes: int
) -> tuple[list[dict[str, Any]], float, dict[str, int], float]:
    """The level split evenly over `processes` spawned workers started together (what a
    multi-process runner would get); the wall time runs from the common start. Returns
    the workers' figures, the wall time, and the server's stats and CPU at the start."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    ready, out, start = ctx.Queue(), ctx.Queue(), ctx.Event()
    shares = zip(_split(concurrency, processes), _split(episodes, processes), strict=True)
    procs = [
        ctx.Process(target=_worker, args=(setup, stack, c, n, ready, start, out), daemon=True)
        for c, n in shares
    ]
    for proc in procs:
        proc.start()
    try:
        for _ in procs:
            problem = ready.get(timeout=600)
            if problem is not None:
                raise RuntimeError(f"benchmark worker failed to start: {problem}")
        before, server_cpu0 = server.stats(), server.cpu_seconds()  # after the warm-ups
        t0 = time.perf_counter()
        start.set()
        parts = [out.get(timeout=3600) for _ in procs]
        wall = time.perf_counter() - t0
    finally:
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.terminate()
    failed = [p["error"] for p in parts if "error" in p]
    if failed:
        raise RuntimeError(f"benchmark worker failed: {failed[0]}")
    return parts, wall, before, server_cpu0


def _run_level(
    server: MockServer,
    setup: Setup,
    stack: str,
    concurrency: int,
    episodes: int,
    latency: float,
    processes: int = 1,
) -> dict[str, Any]:
    if processes == 1:
        before, server_cpu0 = server.stats(), server.cpu_seconds()
        parts = [_measure(setup, stack, concurrency, episodes)]
        wall = parts[0]["wall_s"]
    else:
        parts, wall, before, server_cpu0 = _measure_in_processes(
            server, setup, stack, concurrency, episodes, processes
        )
    server_cpu = server.cpu_seconds() - server_cpu0
    after = server.stats()
    calls = after["requests"] - before["requests"]
    per_episode = calls / episodes
    bound = per_episode * latency * episodes / concurrency
    waves = math.ceil(episodes / concurrency) * per_episode * latency
    cpu = sum(p["cpu_s"] for p in parts)
    label = stack + ("+progress" if setup.progress else "")
    return {
        "stack": label
        + (f" x{processes} proc" if processes > 1 else "")
        + (f" x{setup.workers} workers" if setup.workers > 1 else ""),
        "processes": processes,
        "workers": setup.workers,
        "concurrency": concurrency,
        "episodes": episodes,
        "calls": calls,
        "calls_per_episode": per_episode,
        "wall_s": wall,
        "bound_s": bound,
        "wall_over_bound": wall / bound if bound else None,
        "wave_bound_s": waves,
        "wall_over_wave_bound": wall / waves if waves else None,
        "cpu_s": cpu,
        "cpu_ms_per_call": 1000 * cpu / calls if calls else None,
        "calls_per_s": calls / wall if wall else None,
        "server_cpu_s": server_cpu,
        "connections": after["connections"] - before["connections"],
        "http_clients": sum(p["http_clients"] for p in parts),
        "peak_rss_mb": sum(p["peak_rss_mb"] for p in parts),
        "agent_turn_p50_s": statistics.median(p["agent_turn_p50_s"] for p in parts),
        "agent_turn_p95_s": max(p["agent_turn_p95_s"] for p in parts),
        "errors": sum(p["errors"] for p in parts),
        "error_kinds": [p["error_kinds"] for p in parts],
        "avg_reward": statistics.fmean(p["avg_reward"] for p in parts),
    }


def run_runner_benchmark(
    levels: list[tuple[int, int]] | None = None,
    latency: float = DEFAULT_LATENCY,
    env: str = "airline",
    data_dir: str | None = None,
    stacks: tuple[str, ...] = STACKS,
    model: str = DEFAULT_MODEL,
    progress: bool = False,
    processes: int = 1,
    workers: int = 1,
) -> list[dict[str, Any]]:
    """One row per stack and (concurrency, episodes) level; see the module docstring.

    Stacks (`ALL_STACKS`): "litellm" is the real tool-calling agent and LLM user (the
    number that matters); "litellm-sdk" the same through litellm's openai-SDK route and
    default clients; "raw" swaps both for bare asyncio clients to isolate the runner's
    overhead. `processes` > 1 splits every level evenly over that many processes started
    together. `workers` > 1 runs every level with `tau run --workers` (the runner's own
    worker processes; litellm stacks only). A one-episode warm-up per stack (imports,
    connections) is not measured.
    """
    unknown = [s for s in stacks if s not in ALL_STACKS]
    if unknown:
        raise ValueError(f"unknown stack(s) {unknown}; choose from {', '.join(ALL_STACKS)}")
    levels = levels or DEFAULT_LEVELS
    if processes < 1 or any(min(c, n) < processes for c, n in levels):
        raise ValueError("every level needs at least one episode and one slot per process")
    if workers < 1:
        raise ValueError("--workers must be at least 1")
    if workers > 1 and (processes > 1 or "raw" in stacks):
        raise ValueError("--workers takes the litellm stacks and no --processes")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if "litellm-sdk" in stacks:  # the openai SDK insists on a key; the mock server ignores it
        os.environ.setdefault("OPENAI_API_KEY", "mock-server-needs-no-key")
    server = MockServer(latency)
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="runner-bench-") as tmp:
            setup = Setup(server.base, env, data_dir, tmp, model, progress, workers)
            for stack in stacks:
                _measure(setup, stack, 1, 1)  # warm-up: imports, first connections
                for concurrency, episodes in levels:
                    row = _run_level(
                        server, setup, stack, concurrency, episodes, latency, processes
                    )
                    rows.append(row)
    finally:
        server.stop()
    return rows


COLUMNS = (
    ("stack", lambda r: r["stack"]),
    ("conc.", lambda r: str(r["concurrency"])),
    ("episodes", lambda r: str(r["episodes"])),
    ("calls/ep", lambda r: f"{r['calls_per_episode']:.1f}"),
    ("wall s", lambda r: f"{r['wall_s']:.2f}"),
    ("bound s", lambda r: f"{r['bound_s']:.2f}"),
    ("wall/bound", lambda r: f"{r['wall_over_bound']:.2f}"),
    ("wave bound s", lambda r: f"{r['wave_bound_s']:.2f}"),
    ("wall/wave", lambda r: f"{r['wall_over_wave_bound']:.2f}"),
    ("CPU s", lambda r: f"{r['cpu_s']:.2f}"),
    ("CPU ms/call", lambda r: f"{r['cpu_ms_per_call']:.2f}"),
    ("calls/s", lambda r: f"{r['calls_per_s']:.0f}"),
    ("server CPU s", lambda r: f"{r['server_cpu_s']:.2f}"),
    ("conns", lambda r: str(r["connections"])),
    (
        "turn p50/p95 ms",
        lambda r: f"{r['agent_turn_p50_s'] * 1000:.0f}/{r['agent_turn_p95_s'] * 1000:.0f}",
    ),
    ("peak RSS MB", lambda r: f"{r['peak_rss_mb']:.0f}"),
    ("errors", lambda r: str(r["errors"])),
)


def render(rows: list[dict[str, Any]], latency: float = DEFAULT_LATENCY) -> Any:
    """The rows as a rich table (one column per figure the issue asks for)."""
    from rich.table import Table

    table = Table(title=f"Runner: mock OpenAI server, {latency * 1000:.0f} ms per model call")
    for name, _ in COLUMNS:
        table.add_column(name, justify="left" if name == "stack" else "right")
    for row in rows:
        table.add_row(*(cell(row) for _, cell in COLUMNS))
    return table


def markdown(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table (for docs/performance.md)."""
    out = [
        "| " + " | ".join(name for name, _ in COLUMNS) + " |",
        "|---|" + "---:|" * (len(COLUMNS) - 1),
    ]
    out += ["| " + " | ".join(cell(row) for _, cell in COLUMNS) + " |" for row in rows]
    return "\n".join(out)


def parse_levels(text: str) -> list[tuple[int, int]]:
    """`"1:20,50:500"` -> [(1, 20), (50, 500)] (concurrency:episodes; episodes default 500)."""
    out = []
    for part in text.split(","):
        c, _, n = part.strip().partition(":")
        try:
            concurrency, episodes = int(c), int(n or 500)
        except ValueError:
            raise ValueError(f"bad level {part!r}: expected concurrency:episodes") from None
        if concurrency < 1 or episodes < 1:
            raise ValueError(f"bad level {part!r}: concurrency and episodes must be >= 1")
        out.append((concurrency, episodes))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--levels",
        default=",".join(f"{c}:{n}" for c, n in DEFAULT_LEVELS),
        help="concurrency:episodes pairs, comma separated (default 1:20,50:500,200:500)",
    )
    parser.add_argument("--episodes", type=int, help="episodes at every level (overrides)")
    parser.add_argument("--latency", type=float, default=DEFAULT_LATENCY)
    parser.add_argument("--env", default="airline")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="model name sent (and priced)")
    parser.add_argument(
        "--stack",
        choices=[*ALL_STACKS, "both", "all"],
        default="both",
        help="both = litellm and raw; all adds litellm-sdk. "
        + "; ".join(f"{k}: {v}" for k, v in STACK_HELP.items()),
    )
    parser.add_argument("--progress", action="store_true", help="attach the CLI progress bar")
    parser.add_argument(
        "--processes", type=int, default=1, help="split every level over N processes"
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="run every level with tau run --workers N"
    )
    parser.add_argument("--data-dir")
    parser.add_argument("--json", help="also write the rows as JSON to this file")
    parser.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.latency)
        return 0
    try:
        levels = parse_levels(args.levels)
    except ValueError as exc:
        parser.error(str(exc))
    if args.episodes:
        levels = [(c, args.episodes) for c, _ in levels]
    stacks = {"both": STACKS, "all": ALL_STACKS}.get(args.stack, (args.stack,))
    try:
        rows = run_runner_benchmark(
            levels,
            args.latency,
            args.env,
            args.data_dir,
            stacks,
            args.model,
            args.progress,
            args.processes,
            args.workers,
        )
    except ValueError as exc:
        parser.error(str(exc))
    from rich.console import Console

    console = Console(width=200)
    console.print(render(rows, args.latency))
    if args.markdown:
        print(markdown(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
