"""One measured level in this process: wall time, CPU, peak memory, HTTP clients."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tau_bench.benchmarks.runner.raw_stack import RawStack

DEFAULT_MODEL = "openai/gpt-4o-mini"  # a priced model: cost is computed as in real runs


class PeakRSS:
    """Samples this process's resident memory every 20 ms in a thread (Ray workers
    report their own peak)."""

    def __init__(self) -> None:
        import psutil

        self._proc = psutil.Process()
        self.peak = self._proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _rss(self) -> int:
        return int(self._proc.memory_info().rss)

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


class Completions:
    """The driver-side time (`time.perf_counter`, comparable across processes) at which
    each episode of a run was stored, around the run's own observer if any: the steady
    state's throughput is read from them (`levels.steady_rate`), without start-up.

    `at_last_episode` runs when the last planned episode is stored, while Ray's workers
    still live: a CPU sample then still sees them (they are gone by the run's end)."""

    def __init__(self, inner: Any = None, at_last_episode: Callable[[], Any] | None = None) -> None:
        self.inner = inner
        self.times: list[float] = []
        self._at_last = at_last_episode
        self._left = 0

    def started(self, total: int, done: list[Any]) -> None:
        self._left = total - len(done)
        if self.inner is not None:
            self.inner.started(total, done)

    def episode_done(self, record: Any) -> None:
        self.times.append(time.perf_counter())
        self._left -= 1
        if self._left == 0 and self._at_last is not None:
            self._at_last()
        if self.inner is not None:
            self.inner.episode_done(record)

    def finished(self) -> None:
        if self.inner is not None:
            self.inner.finished()


@contextlib.contextmanager
def openai_route(stack: str) -> Iterator[None]:
    """Select litellm's route for OpenAI calls for one level (read by litellm per call),
    and give back the process's model-call path afterwards (a run sets its own)."""
    from tau_bench.llm import OPENAI_HANDLER_ENV, llm_path, set_llm_path

    before, path = os.environ.get(OPENAI_HANDLER_ENV), llm_path()
    os.environ[OPENAI_HANDLER_ENV] = "False" if stack == "litellm-sdk" else "True"
    try:
        yield
    finally:
        set_llm_path(path)
        if before is None:
            os.environ.pop(OPENAI_HANDLER_ENV, None)
        else:
            os.environ[OPENAI_HANDLER_ENV] = before


def tasks_file(directory: Path, env: str, data_dir: str | None, episodes: int) -> Path:
    """`episodes` copies of one task, so any N runs as N distinct task ids, one trial.

    A new file every call: the processes of a `--processes` level write theirs at the
    same moment, and a shared name let one read the other's half-written file."""
    from tau_bench.domains import load_domain

    task = load_domain(env, data_dir).tasks("test")[0].model_dump(mode="json")
    handle, name = tempfile.mkstemp(prefix=f"tasks_{episodes}_", suffix=".json", dir=directory)
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(json.dumps([task] * episodes))
    return Path(name)


@dataclass(frozen=True)
class Setup:
    """What every measured run shares: the fake server, the domain, where files go.

    Picklable (spawned workers get it): `progress` must be a module-level function."""

    base: str
    env: str = "airline"
    data_dir: str | None = None
    workdir: str = "."
    model: str = DEFAULT_MODEL
    progress: Callable[[], Any] | None = None  # an observer factory (the CLI's progress bar)
    workers: int = 1  # Ray workers when `backend` is "ray"
    backend: Literal["local", "ray"] = "local"  # "ray": `tau run --backend ray` (not raw)


def measure(
    setup: Setup,
    stack: str,
    concurrency: int,
    episodes: int,
    at_last_episode: Callable[[], Any] | None = None,
) -> dict[str, Any]:
    """Run `episodes` episodes at `concurrency` in this process; wall, CPU and memory.
    `at_last_episode`: see `Completions`."""
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
        tasks_file=str(tasks_file(Path(setup.workdir), setup.env, setup.data_dir, episodes)),
        max_concurrency=concurrency,
        workers=setup.workers,
        backend=setup.backend,
        llm_path="direct" if stack == "direct" else "litellm",
        # No pre-flight model call: the table counts the episodes' calls only.
        **no_preflight(),
        data_dir=setup.data_dir,
        log_dir=setup.workdir,
        run_name=f"bench_{stack}_c{concurrency}_n{episodes}_{os.getpid()}_{time.monotonic_ns()}",
        quiet=True,
    )
    plan = prepare_run(config)
    observer = Completions(
        setup.progress() if setup.progress is not None else None, at_last_episode
    )
    clients: dict[str, int] = {}
    workers: list[dict[str, Any]] = []

    async def go() -> Any:
        from tau_bench.llm.direct_clients import direct_client_count

        if stack == "raw":
            raw = RawStack(setup.base)
            runner = Runner(plan, observer, provider=raw.provider(), user_factory=raw.user)
        else:
            runner = Runner(plan, observer)
        try:
            return await runner.run()
        finally:
            clients.update(client_counts())
            clients["direct"] = direct_client_count()
            workers.extend(getattr(runner, "worker_stats", []))
            await aclose_clients()

    with openai_route(stack), PeakRSS() as rss:
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        outcome = asyncio.run(go())
        wall = time.perf_counter() - t0
        driver_cpu = time.process_time() - cpu0
    # Ray workers report the CPU they spent on episodes (their imports excluded).
    workers_cpu = sum(w["cpu_s"] for w in workers)
    summary = outcome.summary
    return {
        "wall_s": wall,
        "start": t0,
        "done_times": observer.times,
        "cpu_s": driver_cpu + workers_cpu,
        "driver_cpu_s": driver_cpu,
        "workers_cpu_s": workers_cpu,
        "peak_rss_mb": rss.peak / 2**20 + sum(w["peak_rss_mb"] for w in workers),
        "http_clients": sum(clients.values()),
        "agent_turn_p50_s": summary["latency"]["agent_turn"]["p50"],
        "agent_turn_p95_s": summary["latency"]["agent_turn"]["p95"],
        "errors": summary["errors"],
        "error_kinds": summary["error_kinds"],
        "avg_reward": summary["avg_reward"],
    }


def no_preflight() -> dict[str, Any]:
    """RunConfig settings that skip the runner's pre-flight call, where it has one."""
    from tau_bench.config import RunConfig

    return {"skip_preflight": True} if "skip_preflight" in RunConfig.model_fields else {}
