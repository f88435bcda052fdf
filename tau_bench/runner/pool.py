"""`workers > 1`: a run's episodes in spawned processes, this process the only writer.

The pending (task, trial) pairs are split round-robin over N spawned processes; each
runs its share with its own `Runner` and sends every finished record back over a queue,
and the parent stores them (log, progress, results, summary). A worker that dies leaves
its missing episodes out of the log (`--resume` re-runs them) and a line in
`worker_errors`.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

from tau_bench.config import RunConfig

Key = tuple[int | str, int]


def is_entry_point(name: str) -> bool:
    """Whether `name` resolves to its `tau_adapters` entry point (what a spawned
    process sees), not to a builder registered in this process."""
    from importlib.metadata import entry_points

    from tau_adapters.registry import GROUP, load_builder

    eps = {ep.name: ep for ep in entry_points(group=GROUP)}
    if name not in eps:
        return False
    try:
        return bool(load_builder(name) is eps[name].load())
    except Exception:
        return True  # a broken entry point fails in the workers with its own message


def _share(value: int, parts: int) -> int:
    return max(1, math.ceil(value / parts))


def worker_config(config: RunConfig, workers: int) -> dict[str, Any]:
    """What one of `workers` processes runs with: the config (secrets included: it only
    crosses a pipe) with its share of `max_concurrency` and of each provider limit."""
    data = config.model_dump()
    data.update(
        workers=1,
        resume=None,
        quiet=True,
        max_concurrency=_share(config.max_concurrency, workers),
        provider_limits={k: _share(v, workers) for k, v in config.provider_limits.items()},
    )
    return data


class WorkerPool:
    """N spawned workers over a round-robin split of the keys, and the queue they
    report on. `run` returns when every worker has finished or died."""

    POLL = 0.2  # seconds between liveness checks while waiting for records

    def __init__(self, config: RunConfig, keys: list[Key], target: Callable[..., None]) -> None:
        """`target(index, config_data, keys, queue)` runs in each spawned process."""
        self._target = target
        n = max(1, min(config.workers, len(keys)))
        self.shares = [keys[i::n] for i in range(n)]
        self.config_data = worker_config(config, n)
        self.errors: list[str] = []
        self._owner = {key: i for i, share in enumerate(self.shares) for key in share}
        self._received = [0] * n
        self._running: set[int] = set()
        self._procs: list[Any] = []
        self._queue: Any = None

    async def run(self, store: Callable[[dict[str, Any]], None]) -> None:
        self.start()
        await self.collect(store)

    def start(self) -> None:
        import multiprocessing

        if not any(self.shares):
            return
        ctx = multiprocessing.get_context("spawn")
        self._queue = ctx.Queue()
        for i, share in enumerate(self.shares):
            proc = ctx.Process(
                target=self._target,
                args=(i, self.config_data, share, self._queue),
                name=f"tau-worker-{i}",
                daemon=True,
            )
            proc.start()
            self._procs.append(proc)
        self._running = set(range(len(self._procs)))

    async def collect(self, store: Callable[[dict[str, Any]], None]) -> None:
        """Store every record the workers send until each has finished or died."""
        import queue as queue_mod

        while self._running:
            try:
                msg = await asyncio.to_thread(self._queue.get, True, self.POLL)
            except queue_mod.Empty:
                dead = [i for i in self._running if not self._procs[i].is_alive()]
                if dead:
                    self._drain(store)  # what they sent before dying is in the pipe
                for i in dead:
                    if i in self._running:
                        self._running.discard(i)
                        self._failed(i, f"exited with code {self._procs[i].exitcode}")
                continue
            self._handle(msg, store)

    def _handle(self, msg: tuple[Any, ...], store: Callable[[dict[str, Any]], None]) -> None:
        kind, payload = msg[0], msg[1]
        if kind == "record":
            store(payload)
            owner = self._owner.get((payload["task_id"], payload["trial"]))
            if owner is not None:
                self._received[owner] += 1
        elif kind == "done":
            self._running.discard(payload)
        elif kind == "error":
            self._running.discard(payload)
            self._failed(payload, f"failed: {msg[2]}")

    def _drain(self, store: Callable[[dict[str, Any]], None]) -> None:
        import queue as queue_mod

        while True:
            try:
                msg = self._queue.get_nowait()
            except queue_mod.Empty:
                return
            self._handle(msg, store)

    def _failed(self, index: int, why: str) -> None:
        missing = len(self.shares[index]) - self._received[index]
        self.errors.append(
            f"worker {index} {why}; {missing} of its episodes not run (--resume runs them)"
        )

    def stop(self, terminate: bool = True) -> None:
        """Reap the workers: terminate them first (cancellation), or give those that
        reported the end of their work a moment to exit."""
        if not terminate:
            for proc in self._procs:
                proc.join(timeout=10)
        for proc in self._procs:
            if proc.is_alive():
                proc.terminate()
        for proc in self._procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5)
