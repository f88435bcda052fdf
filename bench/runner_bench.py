"""Runner benchmark: how close does `tau run` get to the latency bound of its model calls?

A mock OpenAI-compatible server (uvicorn + starlette, in a child process so it does not
share the runner's event loop) answers /v1/chat/completions after a fixed latency with
scripted turns: the agent (requests that carry `tools`) calls one tool, then talks; the
user greets, thanks, then sends ###STOP###. That is 6 sequential model calls per
episode. The real tool-calling agent and LLM user (`tau_bench.llm`, litellm) are pointed
at it with `--api-base`, and N episodes run at each concurrency level.

The bound is calls/episode x latency x episodes / concurrency (no runner can beat it);
with identical episodes the tail cannot be shared, so the "wave bound"
ceil(episodes / concurrency) x calls/episode x latency is reported too.

    python bench/runner_bench.py                      # levels 1:20, 50:500, 200:500
    python bench/runner_bench.py --levels 200:500 --latency 0.2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

DEFAULT_LEVELS = [(1, 20), (50, 500), (200, 500)]
DEFAULT_LATENCY = 0.2
STACKS = ("litellm", "raw")
USER_LINES = ["Hi, I would like to check my profile.", "No, that is all. Thank you!"]

# -- the mock server (child process) ---------------------------------------------------------


def _agent_reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
    last = messages[-1].get("role")
    if last == "tool":
        return {"role": "assistant", "content": "I found your profile. Anything else?"}
    if not any(m.get("role") == "tool" for m in messages):
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{len(messages)}",
                    "type": "function",
                    "function": {
                        "name": "get_user_details",
                        "arguments": json.dumps({"user_id": "mia_li_3668"}),
                    },
                }
            ],
        }
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


def serve(latency: float) -> None:
    """Run the mock server on an ephemeral 127.0.0.1 port; print `PORT <n>` when ready."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    served = {"requests": 0}

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        await asyncio.sleep(latency)
        served["requests"] += 1
        messages = body.get("messages") or []
        reply = _agent_reply(messages) if body.get("tools") else _user_reply(messages)
        return JSONResponse(_completion(str(body.get("model", "mock")), reply))

    async def stats(request: Request) -> JSONResponse:
        return JSONResponse(served)

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/chat/completions", chat, methods=["POST"]),
            Route("/stats", stats),
        ]
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4096)
    config = uvicorn.Config(app, log_level="warning", access_log=False, backlog=4096)
    server = uvicorn.Server(config)

    async def main() -> None:
        print(f"PORT {sock.getsockname()[1]}", flush=True)
        await server.serve(sockets=[sock])

    asyncio.run(main())


class MockServer:
    """The mock server as a child process (started and stopped by us, by pid)."""

    def __init__(self, latency: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--latency", str(latency)],
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

    def requests(self) -> int:
        import httpx

        return int(httpx.get(f"{self.base}/stats", timeout=10).json()["requests"])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


# -- the "raw" stack: the runner without litellm ---------------------------------------------


class RawStack:
    """A minimal agent and user posting straight to the mock server: separates the
    runner's own overhead from the model client's.

    Requests are spread over several small httpx clients: httpcore's pool scans every
    connection on each request, so one client with hundreds of connections costs
    O(connections) CPU per request (see docs/performance.md)."""

    def __init__(self, base: str, clients: int = 32) -> None:
        import ssl

        import httpx

        self.url = f"{base}/v1/chat/completions"
        tls = ssl.create_default_context()  # unused on http://, but built once, not per client
        self.clients = [
            httpx.AsyncClient(timeout=60, verify=tls, limits=httpx.Limits(max_connections=None))
            for _ in range(clients)
        ]
        self._next = 0

    def client(self) -> Any:
        self._next += 1
        return self.clients[self._next % len(self.clients)]

    async def post(self, client: Any, body: dict[str, Any]) -> dict[str, Any]:
        response = await client.post(self.url, json=body)
        response.raise_for_status()
        return dict(response.json()["choices"][0]["message"])

    def provider(self) -> Any:
        from tau_adapters.registry import SimpleProvider

        stack = self

        class Provider(SimpleProvider):
            async def aclose(self) -> None:
                for client in stack.clients:
                    await client.aclose()

        return Provider(lambda: RawAgent(stack))

    def user(self) -> Any:
        return RawUser(self)


class RawAgent:
    def __init__(self, stack: RawStack) -> None:
        self.stack = stack
        self.client = stack.client()
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
        message = await self.stack.post(self.client, body)
        self.messages.append(message)
        calls = [
            ToolCall(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in message.get("tool_calls") or []
        ]
        text = message.get("content") or ""
        return AgentTurn(messages=[text] if text else [], tool_calls=calls)

    async def close(self) -> None:
        pass


class RawUser:
    def __init__(self, stack: RawStack) -> None:
        from tau_adapters.protocol import Usage

        self.stack = stack
        self.client = stack.client()
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
        message = await self.stack.post(self.client, body)
        self.messages.append({"role": "assistant", "content": message["content"]})
        return str(message["content"])


# -- measuring -------------------------------------------------------------------------------


class PeakRSS:
    """Samples this process's resident memory every 20 ms in a thread."""

    def __init__(self) -> None:
        import psutil

        self._proc = psutil.Process()
        self.peak = self._proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self._proc.memory_info().rss)

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._proc.memory_info().rss)


def _tasks_file(directory: Path, env: str, data_dir: str | None, episodes: int) -> Path:
    """`episodes` copies of one task, so any N runs as N distinct task ids, one trial."""
    from tau_bench.domains import load_domain

    task = load_domain(env, data_dir).tasks("test")[0].model_dump(mode="json")
    path = directory / f"tasks_{episodes}.json"
    path.write_text(json.dumps([task] * episodes))
    return path


def _run_level(
    server: MockServer,
    concurrency: int,
    episodes: int,
    latency: float,
    env: str,
    data_dir: str | None,
    workdir: Path,
    stack: str = "litellm",
) -> dict[str, Any]:
    from tau_bench.config import RunConfig
    from tau_bench.runner import Runner, prepare_run

    api_base = f"{server.base}/v1"
    config = RunConfig(
        env=env,
        agent_strategy="tool-calling",
        model="openai/mock-agent",
        api_base=api_base,
        user_strategy="llm",
        user_model="openai/mock-user",
        user_api_base=api_base,
        tasks_file=str(_tasks_file(workdir, env, data_dir, episodes)),
        max_concurrency=concurrency,
        data_dir=data_dir,
        log_dir=str(workdir),
        run_name=f"bench_{stack}_c{concurrency}_n{episodes}_{time.monotonic_ns()}",
        quiet=True,
    )
    plan = prepare_run(config)
    before = server.requests()
    cpu0 = time.process_time()
    with PeakRSS() as rss:
        t0 = time.perf_counter()
        if stack == "raw":
            raw = RawStack(server.base)
            runner = Runner(plan, provider=raw.provider(), user_factory=raw.user)
        else:
            runner = Runner(plan)
        outcome = asyncio.run(runner.run())
        wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    calls = server.requests() - before
    per_episode = calls / episodes if episodes else 0.0
    bound = per_episode * latency * episodes / concurrency
    waves = math.ceil(episodes / concurrency) * per_episode * latency
    return {
        "stack": stack,
        "concurrency": concurrency,
        "episodes": episodes,
        "calls_per_episode": per_episode,
        "wall_s": wall,
        "bound_s": bound,
        "wall_over_bound": wall / bound if bound else None,
        "wave_bound_s": waves,
        "wall_over_wave_bound": wall / waves if waves else None,
        "runner_cpu_s": cpu,
        "peak_rss_mb": rss.peak / 2**20,
        "errors": outcome.summary["errors"],
        "error_kinds": outcome.summary["error_kinds"],
        "avg_reward": outcome.summary["avg_reward"],
    }


def run_runner_benchmark(
    levels: list[tuple[int, int]] | None = None,
    latency: float = DEFAULT_LATENCY,
    env: str = "airline",
    data_dir: str | None = None,
    stacks: tuple[str, ...] = STACKS,
) -> list[dict[str, Any]]:
    """One row per stack and (concurrency, episodes) level; see the module docstring.

    Stacks: "litellm" is the real tool-calling agent and LLM user (the number that
    matters); "raw" swaps both for bare httpx clients to isolate the runner's overhead.
    A one-episode warm-up per stack (imports, connections) is not measured.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # litellm's OpenAI client insists on a key; the mock server ignores it.
    os.environ.setdefault("OPENAI_API_KEY", "mock-server-needs-no-key")
    server = MockServer(latency)
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="runner-bench-") as tmp:
            for stack in stacks:
                _run_level(server, 1, 1, latency, env, data_dir, Path(tmp), stack)
                for concurrency, episodes in levels or DEFAULT_LEVELS:
                    rows.append(
                        _run_level(
                            server, concurrency, episodes, latency, env, data_dir, Path(tmp), stack
                        )
                    )
    finally:
        server.stop()
    return rows


def render(rows: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    table = Table(title=f"Runner: mock OpenAI server ({len(rows)} levels)")
    for col in (
        "stack",
        "concurrency",
        "episodes",
        "calls/ep",
        "wall s",
        "bound s",
        "wall/bound",
        "wave bound s",
        "wall/wave",
        "runner CPU s",
        "peak RSS MB",
        "errors",
    ):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            r["stack"],
            str(r["concurrency"]),
            str(r["episodes"]),
            f"{r['calls_per_episode']:.1f}",
            f"{r['wall_s']:.2f}",
            f"{r['bound_s']:.2f}",
            f"{r['wall_over_bound']:.3f}",
            f"{r['wave_bound_s']:.2f}",
            f"{r['wall_over_wave_bound']:.3f}",
            f"{r['runner_cpu_s']:.2f}",
            f"{r['peak_rss_mb']:.0f}",
            str(r["errors"]),
        )
    return table


def _levels(text: str) -> list[tuple[int, int]]:
    out = []
    for part in text.split(","):
        c, _, n = part.partition(":")
        out.append((int(c), int(n or 500)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--levels",
        default=",".join(f"{c}:{n}" for c, n in DEFAULT_LEVELS),
        help="concurrency:episodes pairs, comma separated (default 1:20,50:500,200:500)",
    )
    parser.add_argument("--episodes", type=int, help="episodes at every level (overrides)")
    parser.add_argument("--latency", type=float, default=DEFAULT_LATENCY)
    parser.add_argument("--env", default="airline")
    parser.add_argument(
        "--stack",
        choices=[*STACKS, "both"],
        default="both",
        help="litellm: the real agent and user; raw: bare httpx (runner overhead only)",
    )
    parser.add_argument("--data-dir")
    parser.add_argument("--json", help="also write the rows as JSON to this file")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.latency)
        return 0
    levels = _levels(args.levels)
    if args.episodes:
        levels = [(c, args.episodes) for c, _ in levels]
    stacks = STACKS if args.stack == "both" else (args.stack,)
    rows = run_runner_benchmark(levels, args.latency, args.env, args.data_dir, stacks)
    from rich.console import Console

    Console().print(render(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
