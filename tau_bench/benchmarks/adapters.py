"""`tau bench adapters`: each hosted adapter's own CPU per turn, against a local peer.

For every installed adapter stand-in (entry-point group `tau_adapters.demos`: the
Dialogflow CX and CES emulators, the reference HTTP bot, the reference A2A agent, each
with the oracle brain) and every domain, the first `tasks` test tasks run at concurrency 1
with the scripted user, the adapter driven exactly as `tau run` drives it. The stand-in
runs in a child process (`adapter_peer`), so this process's CPU is the client's only.

What counts as the adapter's own CPU: the process CPU time (all threads, so the gRPC or
HTTP client library's work counts too) spent inside the adapter's `start`, `send` and
`close` calls, divided by the number of `send` calls (turns). The user simulator, tool
execution on the domain database and scoring run outside those calls and are excluded;
the peer's thinking is in another process and only shows in the wall time. One warm-up
episode per adapter and domain (imports, channel set-up) is run first and not counted.
With `repeat` > 1 the tasks run that many times and every call keeps its lowest CPU
time over the rounds (the same task replays the same calls): on a shared machine other
processes only ever add to a measurement.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tau_adapters.protocol import AgentInput, AgentTurn, SessionContext

DOMAINS = ("airline", "retail")
PEER_START_TIMEOUT = 120.0


class BenchError(ValueError):
    """A benchmark that cannot run (unknown adapter, peer that did not start...)."""


@dataclass
class Row:
    """One adapter on one domain."""

    adapter: str
    domain: str
    episodes: int
    turns: int
    cpu_us_per_turn: float
    wall_p50_ms: float
    avg_reward: float
    errors: int


@dataclass
class _Meter:
    cpus: list[float] = field(default_factory=list)  # every call, in order
    walls: list[float] = field(default_factory=list)  # `send` calls only


def _lowest_cpus(rounds: Sequence[_Meter]) -> list[float]:
    """Each call's lowest CPU over `rounds` (when they replayed the same calls)."""
    if len({len(r.cpus) for r in rounds}) != 1:
        return min(rounds, key=lambda r: sum(r.cpus)).cpus
    return [min(samples) for samples in zip(*(r.cpus for r in rounds), strict=True)]


class TimedAdapter:
    """An AgentAdapter proxy adding the CPU and wall time of every call to a meter."""

    def __init__(self, inner: Any, meter: _Meter) -> None:
        self.inner, self.meter = inner, meter

    async def start(self, session: SessionContext) -> None:
        cpu = time.process_time()
        try:
            await self.inner.start(session)
        finally:
            self.meter.cpus.append(time.process_time() - cpu)

    async def send(self, turn: AgentInput) -> AgentTurn:
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            result: AgentTurn = await self.inner.send(turn)
            return result
        finally:
            self.meter.walls.append(time.perf_counter() - wall)
            self.meter.cpus.append(time.process_time() - cpu)

    async def close(self) -> None:
        cpu = time.process_time()
        try:
            await self.inner.close()
        finally:
            self.meter.cpus.append(time.process_time() - cpu)


def available() -> list[str]:
    """Names of the installed adapter stand-ins (their extras importable)."""
    from tau_adapters.registry import group_entry_points
    from tau_bench.demo import DEMOS_GROUP

    names = []
    for ep in sorted(group_entry_points(DEMOS_GROUP), key=lambda e: e.name):
        try:
            ep.load()
        except ImportError:
            continue
        names.append(ep.name)
    return names


@contextmanager
def peer(name: str, workdir: Path) -> Iterator[dict[str, Any]]:
    """The stand-in `name` served by a child process; yields its JSON hello line."""
    cmd = [sys.executable, "-m", "tau_bench.benchmarks.adapter_peer", name, str(workdir)]
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            err = (proc.communicate(timeout=PEER_START_TIMEOUT)[1] or "").strip().splitlines()
            raise BenchError(f"the {name} stand-in did not start: {err[-1] if err else '?'}")
        yield json.loads(line)
    finally:
        if proc.stdin is not None and not proc.stdin.closed:
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _measure(
    name: str,
    strategy: str,
    options: dict[str, Any],
    domain_name: str,
    data_dir: str | None,
    tasks: int,
    repeat: int = 1,
) -> Row:
    from tau_adapters.registry import build_provider
    from tau_bench.config import RunConfig
    from tau_bench.episode import run_task
    from tau_bench.suites import load_domain
    from tau_bench.users.scripted import ScriptedUser

    config = RunConfig(
        env=domain_name,
        agent_strategy=strategy,
        user_strategy="scripted",
        data_dir=data_dir,
        agent_options=options,
        quiet=True,
    )
    domain = load_domain(domain_name, data_dir)
    test_tasks = domain.tasks("test")
    if not 1 <= tasks <= len(test_tasks):
        raise BenchError(f"tasks must be in 1..{len(test_tasks)} for {domain_name}")
    provider = build_provider(strategy, config.adapter_options())
    if getattr(provider, "tool_server", None) is not None:
        raise BenchError(f"{strategy}: adapters needing a tool server are not benchmarked")

    async def episode(task_id: int, meter: _Meter) -> Any:
        adapter = TimedAdapter(provider.new_adapter(), meter)
        return await run_task(domain, test_tasks[task_id], task_id, adapter, ScriptedUser())

    rounds: list[_Meter] = []
    rewards: list[float] = []
    errors = 0
    try:
        await episode(0, _Meter())  # warm-up: imports, channels, the tool-name map
        for _ in range(repeat):
            rounds.append(_Meter())
            for task_id in range(tasks):
                scored = await episode(task_id, rounds[-1])
                errors += scored.result.error is not None
                rewards.append(scored.reward_value or 0.0)
    finally:
        await provider.aclose()
    turns = len(rounds[0].walls)
    walls = [w for r in rounds for w in r.walls]
    return Row(
        adapter=name,
        domain=domain_name,
        episodes=tasks,
        turns=turns,
        cpu_us_per_turn=sum(_lowest_cpus(rounds)) / turns * 1e6 if turns else 0.0,
        wall_p50_ms=statistics.median(walls) * 1e3 if walls else 0.0,
        avg_reward=sum(rewards) / len(rewards),
        errors=errors,
    )


def run(
    adapters: Sequence[str] | None = None,
    domains: Sequence[str] = DOMAINS,
    tasks: int = 5,
    data_dir: str | None = None,
    agent_options: dict[str, Any] | None = None,
    repeat: int = 1,
) -> list[Row]:
    """Measure each adapter on each domain (see module doc); adapters default to all.
    `agent_options` are added to every adapter's options (e.g. `trace=full`)."""
    installed = available()
    names = list(adapters or installed)
    unknown = [n for n in names if n not in installed]
    if unknown:
        known = ", ".join(installed) or "none"
        raise BenchError(f"no installed adapter stand-in named {unknown[0]!r} (known: {known})")
    rows: list[Row] = []
    for name in names:
        with tempfile.TemporaryDirectory() as tmp, peer(name, Path(tmp)) as hello:
            saved = {k: os.environ.get(k) for k in hello["env"]}
            os.environ.update(hello["env"])
            try:
                for domain in domains:
                    options = {**hello["options"], **(agent_options or {})}
                    row = asyncio.run(
                        _measure(name, hello["strategy"], options, domain, data_dir, tasks, repeat)
                    )
                    rows.append(row)
            finally:
                for key, value in saved.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value
    return rows


COLUMNS = ("adapter", "domain", "episodes", "turns", "µs CPU/turn", "p50 wall/turn", "reward")


def cells(row: Row) -> list[str]:
    return [
        row.adapter,
        row.domain,
        str(row.episodes),
        str(row.turns),
        f"{row.cpu_us_per_turn:.0f}",
        f"{row.wall_p50_ms:.2f} ms",
        f"{row.avg_reward:.2f}" + (f" ({row.errors} errors)" if row.errors else ""),
    ]


def markdown(rows: Sequence[Row]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cells(r)) + " |" for r in rows]
    return "\n".join(lines)


def render(rows: Sequence[Row]) -> Any:
    from rich.table import Table

    table = Table(title="Hosted adapters: the adapter's own CPU per turn (peer in its own process)")
    for col in COLUMNS:
        table.add_column(
            col, justify="left" if col in ("adapter", "domain") else "right", overflow="fold"
        )
    for row in rows:
        table.add_row(*cells(row))
    return table


def as_json(rows: Sequence[Row]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]
