"""What runs on the Ray workers: the episode worker.

An `EpisodeWorker` rebuilds the run from its config (agent from its entry point, user,
tool server) once, then runs episodes it is handed with the runner's own `_episode`, so
infra-error handling and model-call retries are exactly those of a local run; it hands
back each finished record as its log line (priced and encoded, as the driver appends
it) and writes nothing. Episodes and their records travel in batches (`exchange`): a
Ray call costs the driver about half a millisecond of CPU, more than storing a record.
With `--provider-limit` its model calls take their slots from the run's one limiter
actor (`backends.limiter`), so a cap holds for the whole cluster, not per worker.

A plain class; `tau_bench.runner.backends.ray` wraps it with `ray.remote` (Ray is an
optional dependency: imported there, and here only inside a running worker).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import time
from typing import Any

from tau_bench.runner.backends.limiter import RemoteSlots

Key = tuple[int | str, int]


class WorkerSetupError(Exception):
    """The run could not be built on this worker (data, a package or credentials missing
    on its node); the message names the cause and the node, in one line."""


def _setup_error(exc: BaseException) -> WorkerSetupError:
    import ray

    from tau_bench.config import RunConfigError

    why = (str(exc).strip().splitlines() or [""])[0]
    if not isinstance(exc, RunConfigError):  # a message of ours reads as it is
        why = f"{type(exc).__name__}: {why}"
    return WorkerSetupError(f"{why} (on the node at {ray.util.get_node_ip_address()})")


def _check_keys(config: Any, provider: Any, tasks: list[Any]) -> None:
    """Fail the setup in one line when a model's API key is missing on this node, where
    every episode would otherwise fail with an auth error after the driver's pre-flight
    passed (the key was exported in the driver's shell only)."""
    from tau_bench.config import RunConfigError
    from tau_bench.runner.preflight import missing_keys

    missing = missing_keys(config, provider, tasks)
    if missing:
        raise RunConfigError(
            f"{missing[0]} in this Ray node's environment (a cluster's workers get the "
            "environment their node's `ray start` ran in, not the driver's; docs/scale.md)"
        )


class LimiterName(tuple[str, str]):
    """The run's limiter actor as a worker's constructor takes it, by its name and
    namespace (an actor handle among a restartable actor's arguments has Ray print a
    native error line); a restarted worker finds the same limiter again."""

    def resolve(self) -> Any:
        import ray

        return ray.get_actor(self[0], namespace=self[1])


class EpisodeWorker:
    """Runs episodes of one run in a Ray worker process (an async Ray actor)."""

    def __init__(
        self, config_data: dict[str, Any], limiter: LimiterName | None, runner_cls: type
    ) -> None:
        """`runner_cls` is the driver's `Runner` class (Ray sends it by reference: this
        module does not import the runner, which imports the backends)."""
        self._config_data = config_data
        self._limiter = limiter.resolve() if limiter is not None else None
        self._runner_cls = runner_cls
        self._ready: asyncio.Lock | None = None
        self._runner: Any = None
        self._provider: Any = None
        self._slots: RemoteSlots | None = None
        # the live-episode cap of a hosted agent (`--provider-limit decibel=5`)
        self._episode_slots: RemoteSlots | None = None
        self._agent = ""
        self._news: asyncio.Event | None = None  # set when an episode ends
        self._running: dict[Key, asyncio.Task[None]] = {}
        self._lines: list[bytes] = []  # finished episodes' log lines, not yet handed back
        self._lost: list[tuple[Key, str]] = []
        self._episodes = 0
        self._cpu0 = 0.0
        self._pace = contextlib.ExitStack()  # the collector's run pace, from setup to close

    async def _setup(self) -> None:
        from tau_bench.config import RunConfig
        from tau_bench.llm import set_llm_path, set_provider_limits
        from tau_bench.llm.limits import set_remote_limiter
        from tau_bench.runner.collector import run_pace
        from tau_bench.runner.plan import prepare_run

        config = RunConfig.model_validate(self._config_data)
        runner = self._runner_cls(prepare_run(config))
        runner._preflight_user()
        if config.model or config.user_strategy not in ("scripted", "human"):
            from tau_bench.llm.runtime import litellm

            litellm()  # imported now, not in the first episode (its CPU is not an episode's)
        provider = runner._build_provider()
        if not config.skip_preflight:
            _check_keys(config, provider, list(runner.plan.tasks.values()))
        await runner._start_tool_server(provider)
        set_llm_path(config.llm_path)
        set_provider_limits(config.provider_limits)
        if self._limiter is not None and config.provider_limits:
            # A model call never outlives its turn, so neither does its wait for a slot.
            self._slots = RemoteSlots(self._limiter, wait_deadline=config.turn_timeout)
        set_remote_limiter(self._slots.hold if self._slots is not None else None)
        if self._limiter is not None and config.agent_strategy in config.provider_limits:
            # From the limiter too: runs sharing it (`tau eval`'s user models) share the
            # cap. An episode waits for its slot as it does locally: until one is free.
            self._episode_slots = RemoteSlots(self._limiter, wait_deadline=None)
            self._agent = config.agent_strategy
        self._runner, self._provider = runner, provider
        self._pace.enter_context(run_pace())  # this process runs episodes until close()
        self._cpu0 = time.process_time()  # episodes' CPU from here (imports excluded)

    async def exchange(self, keys: list[Key]) -> tuple[list[bytes], list[tuple[Key, str]]]:
        """Start the episodes of `keys`, then hand back what finished since the last
        call: the log lines of finished episodes, and the keys of any that ended
        without a record (with why). Waits until there is something to hand back or
        nothing runs; every episode has its own deadline, so the wait has one too.

        One call per batch, not per episode: the driver keeps one exchange in flight
        per worker, and under load the lines of many episodes share its round trip."""
        if self._ready is None:
            self._ready, self._news = asyncio.Lock(), asyncio.Event()
        async with self._ready:
            if self._runner is None:
                try:
                    await self._setup()
                except Exception as exc:
                    raise _setup_error(exc) from None
        assert self._news is not None
        for key in keys:
            episode = (key[0], key[1])
            self._running[episode] = asyncio.create_task(self._one(episode))
        while not (self._lines or self._lost) and self._running:
            self._news.clear()
            await self._news.wait()
        lines, self._lines = self._lines, []
        lost, self._lost = self._lost, []
        return lines, lost

    async def _one(self, key: Key) -> None:
        """One episode: its record priced and encoded here, as the log stores it (the
        driver appends the line as is: the encoding's CPU is spread over the workers)."""
        try:
            async with self._episode_slot():
                record = await self._runner._episode(self._provider, key)
            self._lines.append(self._runner._log_line(record))
            self._episodes += 1
        except Exception as exc:  # `_episode` records failures: a bug, reported to the driver
            self._lost.append((key, f"{type(exc).__name__}: {exc}"))
        finally:
            del self._running[key]
            if self._news is not None:
                self._news.set()

    def _episode_slot(self) -> contextlib.AbstractAsyncContextManager[None]:
        if self._episode_slots is None:
            return contextlib.nullcontext()
        return self._episode_slots.hold(self._agent)

    def cancel(self) -> int:
        """Cancel every running episode (the run's circuit breaker tripped); the
        pending `exchange` then returns what finished. Returns how many it cancelled."""
        for task in self._running.values():
            task.cancel()
        return len(self._running)

    def pid(self) -> int:
        """This worker's process id (tests kill it)."""
        return os.getpid()

    def endpoints(self, models: dict[str, Any]) -> tuple[str, dict[str, str | None]]:
        """This worker's node, and where its calls of each of `models` (`LLMConfig`s by
        label) would go from there (`tau_bench.llm.endpoints.endpoint`): the driver
        compares them with its own."""
        import ray

        from tau_bench.llm.endpoints import endpoint

        found = {label: endpoint(model) for label, model in models.items()}
        return ray.util.get_node_ip_address(), found

    async def close(self) -> dict[str, Any]:
        """Release the agent provider, the tool server and the model clients; return
        where this worker ran, its episodes, their CPU seconds, its peak memory and the
        collector's pace (benchmarks, and tests that check a run spread over the
        cluster's nodes)."""
        import resource

        import ray

        stats = {
            "pid": os.getpid(),
            "node_id": ray.get_runtime_context().get_node_id(),
            "episodes": self._episodes,
            "cpu_s": time.process_time() - self._cpu0 if self._runner is not None else 0.0,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "gc_young_threshold": gc.get_threshold()[0],  # the pace its episodes ran at
        }
        for task in list(self._running.values()):  # none after a run that finished
            task.cancel()
        for slots in (self._slots, self._episode_slots):
            if slots is not None:
                await slots.aclose()
        self._slots = self._episode_slots = None
        if self._runner is not None:
            from tau_bench.llm import aclose_clients

            await self._runner._release(self._provider)
            with contextlib.suppress(Exception):
                await aclose_clients()
            self._runner = None
        self._pace.close()
        return stats
