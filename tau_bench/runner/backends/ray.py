"""The Ray backend: a run's episodes on Ray workers, the driver the only writer.

`RayBackend(config).run(pending, store)` connects to the cluster at `ray_address` (or
starts a local Ray sized for `workers`), starts `workers` episode-worker actors and, when
the run caps providers, one `ProviderLimiter` actor, and hands out (task, trial) keys:
at most `max_concurrency` episodes in flight cluster-wide (fewer when `--provider-limit`
caps the agent strategy itself), each to the least-loaded worker. Every finished record
comes back to the driver, which stores it (log, progress, results) - so the results
contract is the local one and `--resume` works across backends. When storing a record
trips the run's circuit breaker, nothing new is handed out and the episodes in flight
are cancelled (a record that came back meanwhile is still stored).

Failures: a worker process that dies is restarted by Ray and its in-flight episodes are
re-run on it (`max_restarts`, `max_task_retries`); the driver stores one record per
key, so nothing is duplicated. A worker that keeps dying leaves its episodes out of the
log with a line in `errors` (`--resume` runs them). When the driver goes, so does its
job: the actors are not detached, and a Ray started here shares the driver's fate. A
worker that dies holding provider slots gives them back when its leases expire
(`backends.limiter`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tau_bench.config import RunConfig
from tau_bench.runner.backends import Key, share, worker_config
from tau_bench.runner.backends.limiter import LEASE_TTL, ProviderLimiter
from tau_bench.runner.backends.ray_actors import EpisodeWorker

MAX_RESTARTS = 3
"""Times Ray restarts a dead worker (and re-runs its in-flight episodes) before the
driver gives its episodes up for this run."""

START_DEADLINE = 300.0
"""Seconds the workers get to be placed on the cluster and to start."""

STOP_DEADLINE = 30.0
"""Seconds workers get to release their agents and clients at the end of a run, and
cancelled episodes get to end when the circuit breaker stops a run."""

Store = Callable[[dict[str, Any]], bool]
"""Takes a finished episode's record data; True when the run must stop (breaker)."""


@dataclass(frozen=True)
class Flight:
    """One episode handed to a worker: its key, the worker's index, Ray's reference."""

    key: Key
    worker: int
    ref: Any


def ray_module() -> Any:
    """Ray, or a one-line `MissingExtraError` naming the `ray` extra."""
    from tau_adapters.extras import require

    require("ray")
    import ray

    return ray


def start_ray(address: str | None, workers: int) -> bool:
    """Connect to the cluster at `address`, or start a local Ray with `workers` CPUs;
    True when this call started (and so must stop) it."""
    ray = ray_module()
    if ray.is_initialized():
        return False
    common: dict[str, Any] = {
        "include_dashboard": False,
        "logging_level": logging.WARNING,
        "log_to_driver": True,
        "configure_logging": True,
    }
    if address:
        ray.init(address=address, **common)
    else:
        ray.init(address="local", num_cpus=max(1, workers), **common)
    return True


class RayBackend:
    """One run's workers and limiter on Ray; see the module docstring."""

    def __init__(self, config: RunConfig, runner_cls: type, workers: int | None = None) -> None:
        """`runner_cls` builds each worker's runner (the driver's `Runner` class)."""
        self.config = config
        self.runner_cls = runner_cls
        self.workers = max(1, workers or config.workers)
        self.errors: list[str] = []
        self.worker_stats: list[dict[str, Any]] = []  # from each worker at a graceful stop
        self.actors: list[Any] = []
        self.limiter: Any = None
        self._started_ray = False

    def in_flight_cap(self) -> int:
        """Episodes running at once cluster-wide: `max_concurrency`, or fewer when a
        provider limit names the agent strategy (a hosted agent's live episodes)."""
        cap = self.config.max_concurrency
        limit = self.config.provider_limits.get(self.config.agent_strategy)
        return min(cap, limit) if limit else cap

    def start(self) -> None:
        """Start (or join) Ray and the actors; on failure leave nothing running."""
        ray = ray_module()
        self._started_ray = start_ray(self.config.ray_address, self.workers)
        try:
            self._start_actors(ray)
        except BaseException:
            self._kill_all(ray)
            if self._started_ray:
                ray.shutdown()
                self._started_ray = False
            raise

    def _start_actors(self, ray: Any) -> None:
        per_worker = share(self.in_flight_cap(), self.workers)
        if self.config.provider_limits:
            self.limiter = (
                ray.remote(ProviderLimiter)
                .options(num_cpus=0, max_concurrency=10_000)
                .remote(self.config.provider_limits, LEASE_TTL)
            )
        data = worker_config(self.config, self.workers)
        data["max_concurrency"] = per_worker
        actor = ray.remote(EpisodeWorker).options(
            num_cpus=1,
            scheduling_strategy="SPREAD",  # over the cluster's nodes, not packed on one
            max_concurrency=per_worker + 2,  # + pid() and close() while episodes run
            max_restarts=MAX_RESTARTS,
            max_task_retries=MAX_RESTARTS,
        )
        self.actors = [
            actor.remote(data, self.limiter, self.runner_cls) for _ in range(self.workers)
        ]
        try:  # every worker placed and started, or a clear error (not a silent wait)
            ray.get([a.pid.remote() for a in self.actors], timeout=START_DEADLINE)
        except ray.exceptions.GetTimeoutError:
            raise RuntimeError(
                f"{self.workers} workers of 1 CPU each were not all placed within "
                f"{START_DEADLINE:.0f} s (fewer CPUs in the cluster?)"
            ) from None

    async def run(self, keys: list[Key], store: Store) -> None:
        """Run `keys` on the workers, calling `store(record data)` as each finishes;
        when `store` says stop, cancel the episodes in flight and return."""
        if not self.actors:
            self.start()
        ray = ray_module()
        queue: deque[Key] = deque(keys)
        load = [0] * len(self.actors)
        running: dict[asyncio.Future[Any], Flight] = {}
        cap = self.in_flight_cap()
        stop = False
        try:
            while (queue or running) and not stop:
                while queue and len(running) < cap:
                    worker = min(range(len(load)), key=load.__getitem__)
                    key = queue.popleft()
                    ref = self.actors[worker].run.remote(key)
                    running[asyncio.wrap_future(ref.future())] = Flight(key, worker, ref)
                    load[worker] += 1
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for future in done:  # all of them: a finished record is never dropped
                    flight = running.pop(future)
                    load[flight.worker] -= 1
                    try:
                        data = future.result()
                    except ray.exceptions.RayActorError as exc:
                        self._lost(flight.worker, flight.key, exc)
                        continue
                    stop = store(data) or stop
            if stop:
                await self._cancel(ray, running, store)
        finally:
            for future in running:
                future.cancel()

    async def _cancel(
        self, ray: Any, running: dict[asyncio.Future[Any], Flight], store: Store
    ) -> None:
        """Cancel the episodes in flight (left out of the log: `--resume` runs them),
        storing any that finished before its cancellation took effect."""
        for flight in running.values():
            with contextlib.suppress(Exception):
                ray.cancel(flight.ref)
        if not running:
            return
        ended, _ = await asyncio.wait(running, timeout=STOP_DEADLINE)
        for future in ended:
            del running[future]
            if not future.cancelled() and future.exception() is None:
                store(future.result())

    def _lost(self, worker: int, key: Key, exc: BaseException) -> None:
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        self.errors.append(
            f"worker {worker} died {MAX_RESTARTS + 1} times; episode {key[0]} trial {key[1]}"
            f" not run (--resume runs it): {first_line[:200]}"
        )

    def _kill_all(self, ray: Any) -> None:
        for actor in [*self.actors, *([self.limiter] if self.limiter is not None else [])]:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        self.actors, self.limiter = [], None

    async def stop(self, graceful: bool = True) -> None:
        """Release the workers (letting them close their clients when `graceful`), kill
        the actors, and stop Ray if this backend started it."""
        ray = ray_module()
        if graceful and self.actors:
            refs = [a.close.remote() for a in self.actors]
            with contextlib.suppress(Exception):
                self.worker_stats = list(
                    await asyncio.wait_for(
                        asyncio.gather(*(asyncio.wrap_future(r.future()) for r in refs)),
                        STOP_DEADLINE,
                    )
                )
        self._kill_all(ray)
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False
