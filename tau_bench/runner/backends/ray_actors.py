"""What runs inside the Ray cluster: episode workers and the one provider limiter.

An `EpisodeWorker` rebuilds the run from its config (agent from its entry point, user,
tool server) once, then runs episodes it is handed with the runner's own `_episode`, so
infra-error handling and model-call retries are exactly those of a local run; it returns
each record as plain data and writes nothing. The `ProviderLimiter` holds the run's
`--provider-limit` semaphores: every worker's model calls take their slot from it, so a
cap holds for the whole cluster, not per worker.

These are plain classes; `tau_bench.runner.backends.ray` wraps them with `ray.remote`
(Ray is an optional dependency, imported only there).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

Key = tuple[int | str, int]


class ProviderLimiter:
    """Cluster-wide caps on concurrent model calls per provider (an async Ray actor)."""

    def __init__(self, limits: dict[str, int]) -> None:
        self._limits = dict(limits)
        self._sems: dict[str, asyncio.Semaphore] = {}

    def _sem(self, provider: str) -> asyncio.Semaphore:
        if provider not in self._sems:  # created on the actor's own loop
            self._sems[provider] = asyncio.Semaphore(self._limits[provider])
        return self._sems[provider]

    async def acquire(self, provider: str) -> None:
        """Wait for a slot of `provider` (returns when the caller may call)."""
        await self._sem(provider).acquire()

    def release(self, provider: str) -> None:
        self._sem(provider).release()

    def in_use(self) -> dict[str, int]:
        """Slots held now, per provider (tests)."""
        return {p: self._limits[p] - s._value for p, s in self._sems.items()}


def remote_slots(limiter: Any) -> Callable[[str], AbstractAsyncContextManager[None]]:
    """A slot factory for `tau_bench.llm.limits.set_remote_limiter`: each model call
    holds one of the limiter actor's slots for its provider."""

    @contextlib.asynccontextmanager
    async def hold(provider: str) -> AsyncIterator[None]:
        await limiter.acquire.remote(provider)
        try:
            yield
        finally:
            limiter.release.remote(provider)

    return hold


class EpisodeWorker:
    """Runs episodes of one run in a Ray worker process (an async Ray actor)."""

    def __init__(self, config_data: dict[str, Any], limiter: Any, runner_cls: type) -> None:
        """`runner_cls` is the driver's `Runner` class (Ray sends it by reference: this
        module does not import the runner, which imports the backends)."""
        self._config_data = config_data
        self._limiter = limiter
        self._runner_cls = runner_cls
        self._ready: asyncio.Lock | None = None
        self._runner: Any = None
        self._provider: Any = None
        self._cpu0 = 0.0

    async def _setup(self) -> None:
        from tau_bench.config import RunConfig
        from tau_bench.llm import set_llm_path, set_provider_limits
        from tau_bench.llm.limits import set_remote_limiter
        from tau_bench.runner.plan import prepare_run

        config = RunConfig.model_validate(self._config_data)
        runner = self._runner_cls(prepare_run(config))
        runner._preflight_user()
        if config.model or config.user_strategy not in ("scripted", "human"):
            from tau_bench.llm.runtime import litellm

            litellm()  # imported now, not in the first episode (its CPU is not an episode's)
        provider = runner._build_provider()
        await runner._start_tool_server(provider)
        set_llm_path(config.llm_path)
        set_provider_limits(config.provider_limits)
        set_remote_limiter(
            remote_slots(self._limiter) if self._limiter and config.provider_limits else None
        )
        self._runner, self._provider = runner, provider
        self._cpu0 = time.process_time()  # episodes' CPU from here (imports excluded)

    async def run(self, key: Key) -> dict[str, Any]:
        """Run one (task, trial) episode and return its record as plain data."""
        if self._ready is None:
            self._ready = asyncio.Lock()
        async with self._ready:
            if self._runner is None:
                await self._setup()
        record = await self._runner._episode(self._provider, tuple(key))
        return dict(record.to_dict())

    def pid(self) -> int:
        """This worker's process id (tests kill it)."""
        return os.getpid()

    async def close(self) -> dict[str, Any]:
        """Release the agent provider, the tool server and the model clients; return
        this worker's CPU seconds spent on episodes and its peak memory (benchmarks)."""
        import resource

        stats = {
            "pid": os.getpid(),
            "cpu_s": time.process_time() - self._cpu0 if self._runner is not None else 0.0,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
        if self._runner is not None:
            from tau_bench.llm import aclose_clients

            await self._runner._release(self._provider)
            with contextlib.suppress(Exception):
                await aclose_clients()
            self._runner = None
        return stats
