"""The async runner: tasks x trials through the episode loop, concurrently, resumably.

`prepare_run(config)` does everything that can fail on bad input (domain, split, task
selection, resume compatibility) before any file is written; `Runner(plan).run()` builds
the agent provider once, runs the pending (task, trial) pairs on at most
`max_concurrency` live episodes (`provider_limits` cap model calls per provider through
`tau_bench.llm`, and live episodes of a hosted agent named by its strategy),
appends each finished episode to the log, and at the end - or on cancellation (Ctrl-C) -
writes the τ-bench results file and the summary from everything finished so far.
One failing episode is recorded as an error and never stops the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import random
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tau_adapters.protocol import AdapterError, UserSimulator
from tau_adapters.registry import AgentProvider, UnknownAdapterError, build_provider
from tau_bench.config import RunConfig, RunConfigError, fingerprint_differences
from tau_bench.domains import Domain, load_domain
from tau_bench.episode import run_task
from tau_bench.metrics import summarize
from tau_bench.results import (
    OUTPUT_WRITERS,
    EpisodeRecord,
    LogFileError,
    ResultsLog,
    now_iso,
    read_log,
    record_from_episode,
    record_from_exception,
    run_file_stem,
    write_json_atomic,
)
from tau_bench.tasks import Task, load_tasks
from tau_bench.users import UnknownUserStrategyError, build_user

Key = tuple[int, int]  # (task id, trial)
NO_MODEL_USERS = frozenset({"scripted", "human"})


class RunObserver(Protocol):
    """Progress hooks (the CLI's progress bar); all optional no-ops by default."""

    def started(self, total: int, done: list[EpisodeRecord]) -> None: ...

    def episode_done(self, record: EpisodeRecord) -> None: ...

    def finished(self) -> None: ...


@dataclass
class RunPlan:
    """What a run will do, fully validated: tasks, the (task, trial) order, file names."""

    config: RunConfig
    domain: Domain
    tasks: dict[int, Task]
    order: list[Key]
    task_hash: str
    run_name: str
    log_path: Path
    existing: dict[Key, EpisodeRecord] = field(default_factory=dict)
    resumed: bool = False
    source: str = ""

    @property
    def pending(self) -> list[Key]:
        """Pairs still to run: missing from the log, or recorded with an error."""
        return [k for k in self.order if k not in self.existing or self.existing[k].is_error]

    @property
    def results_path(self) -> Path:
        return self.log_path.with_suffix(".json")

    @property
    def summary_path(self) -> Path:
        return self.log_path.with_name(self.log_path.stem + ".summary.json")


@dataclass
class RunOutcome:
    plan: RunPlan
    records: list[EpisodeRecord]
    summary: dict[str, Any]
    ran: int
    interrupted: bool = False


# -- preparation -----------------------------------------------------------------------


def task_data_hash(tasks: dict[int, Task]) -> str:
    """sha256 of the selected tasks' JSON (ids included): resume refuses a mismatch."""
    payload = json.dumps(
        [[tid, task.model_dump(mode="json")] for tid, task in sorted(tasks.items())],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _select(config: RunConfig, all_tasks: list[Task], source: str) -> tuple[list[int], int]:
    n = len(all_tasks)
    if n == 0:
        raise RunConfigError(f"{source} has no tasks")
    end = n if config.end_index == -1 else min(config.end_index, n)
    if config.task_ids:
        bad = [t for t in config.task_ids if not 0 <= t < n]
        if bad:
            raise RunConfigError(f"task id {bad[0]} out of range for {source} (valid: 0-{n - 1})")
        return list(dict.fromkeys(config.task_ids)), end
    if not 0 <= config.start_index < end:
        raise RunConfigError(
            f"empty task range {config.start_index}-{end} for {source} ({n} tasks)"
        )
    return list(range(config.start_index, end)), end


def _resolve_resume_path(path: str) -> Path:
    p = Path(path)
    if p.suffix == ".jsonl":
        return p
    name = p.name.removesuffix(".summary.json").removesuffix(".json")
    candidate = p.with_name(name + ".jsonl")
    return candidate if candidate.exists() else p


def _free_stem(log_dir: Path, stem: str) -> str:
    candidate, n = stem, 1
    while (log_dir / f"{candidate}.jsonl").exists() or (log_dir / f"{candidate}.json").exists():
        n += 1
        candidate = f"{stem}_{n}"
    return candidate


def prepare_run(config: RunConfig) -> RunPlan:
    """Validate the config against the data and any log to resume; writes nothing."""
    domain = load_domain(config.env, config.data_dir)
    if config.tasks_file:
        all_tasks = load_tasks(Path(config.tasks_file))
        source = f"tasks file {config.tasks_file}"
    else:
        all_tasks = domain.tasks(config.task_split)
        source = f"{config.env} {config.task_split}"
    ids, end = _select(config, all_tasks, source)
    tasks = {tid: all_tasks[tid] for tid in ids}
    rng = random.Random(config.seed)
    order: list[Key] = []
    for trial in range(config.num_trials):
        trial_ids = list(ids)
        if config.shuffle:
            rng.shuffle(trial_ids)
        order.extend((tid, trial) for tid in trial_ids)
    digest = task_data_hash(tasks)

    if config.resume:
        log_path = _resolve_resume_path(config.resume)
        try:
            contents = read_log(log_path)
        except LogFileError as exc:
            raise RunConfigError(f"cannot resume: {exc}") from None
        header = contents.header
        diffs = fingerprint_differences(header.get("fingerprint", {}), config.fingerprint())
        if diffs:
            raise RunConfigError(
                f"cannot resume {log_path}: the configuration differs ({'; '.join(diffs)})"
            )
        if header.get("task_data_hash") != digest:
            raise RunConfigError(
                f"cannot resume {log_path}: the selected tasks differ from that run's "
                "(task selection or task data changed)"
            )
        return RunPlan(
            config=config,
            domain=domain,
            tasks=tasks,
            order=order,
            task_hash=digest,
            run_name=str(header.get("run_name") or log_path.stem),
            log_path=log_path,
            existing=contents.records,
            resumed=True,
            source=source,
        )

    log_dir = Path(config.log_dir)
    stem = config.run_name or run_file_stem(
        agent_strategy=config.agent_strategy,
        model=config.model,
        temperature=config.temperature,
        start_index=config.start_index,
        end_index=end,
        user_model=config.user_model,
        user_strategy=config.user_strategy,
    )
    stem = _free_stem(log_dir, stem)
    return RunPlan(
        config=config,
        domain=domain,
        tasks=tasks,
        order=order,
        task_hash=digest,
        run_name=stem,
        log_path=log_dir / f"{stem}.jsonl",
        source=source,
    )


# -- running ---------------------------------------------------------------------------


class _ProviderSlots:
    """At most N live episodes per named provider."""

    def __init__(self, limits: dict[str, int], keys: list[str | None]) -> None:
        wanted = sorted({k for k in keys if k and k in limits})
        self._sems = [asyncio.Semaphore(limits[k]) for k in wanted]

    @contextlib.asynccontextmanager
    async def hold(self) -> Any:
        async with contextlib.AsyncExitStack() as stack:
            for sem in self._sems:  # fixed order: no deadlock between episodes
                await stack.enter_async_context(sem)
            yield


class Runner:
    """Runs a prepared plan; see the module docstring."""

    def __init__(
        self,
        plan: RunPlan,
        observer: RunObserver | None = None,
        provider: AgentProvider | None = None,
        user_factory: Callable[[], UserSimulator] | None = None,
    ) -> None:
        """`provider` and `user_factory` replace the ones the config names (embedding,
        benchmarks); the defaults build them from `agent_strategy` / `user_strategy`."""
        self.plan = plan
        self.config = plan.config
        self.observer = observer
        self._provider = provider
        self._user_factory = user_factory
        self._records: dict[Key, EpisodeRecord] = dict(plan.existing)
        self._log: ResultsLog | None = None
        self._ran = 0
        self._started = 0.0
        self.outcome: RunOutcome | None = None

    # The pieces that can fail on configuration run before any file is touched.
    def _build_provider(self) -> AgentProvider:
        name = self.config.agent_strategy
        try:
            return build_provider(name, self.config.adapter_options())
        except UnknownAdapterError as exc:
            raise RunConfigError(str(exc)) from None
        except ImportError as exc:
            raise RunConfigError(f"agent strategy {name!r} is not available: {exc}") from None
        except (AdapterError, ValueError, KeyError) as exc:
            raise RunConfigError(f"agent strategy {name!r}: {exc}") from None

    def _new_user(self) -> UserSimulator:
        if self._user_factory is not None:
            return self._user_factory()
        return build_user(self.config.user_strategy, **self.config.user_options())

    def _preflight_user(self) -> None:
        name = self.config.user_strategy
        try:
            self._new_user()
        except UnknownUserStrategyError as exc:
            raise RunConfigError(str(exc)) from None
        except ImportError as exc:
            raise RunConfigError(f"user strategy {name!r} is not available: {exc}") from None
        except (ValueError, KeyError) as exc:
            raise RunConfigError(f"user strategy {name!r}: {exc}") from None

    def _open_log(self) -> ResultsLog:
        plan = self.plan
        if plan.resumed:
            return ResultsLog.reopen(plan.log_path, {"at": now_iso(), "pending": len(plan.pending)})
        header = {
            "run_name": plan.run_name,
            "created": now_iso(),
            "config": self.config.public_dict(),
            "fingerprint": self.config.fingerprint(),
            "task_data_hash": plan.task_hash,
            "task_source": plan.source,
            "task_ids": sorted(plan.tasks),
        }
        return ResultsLog.create(plan.log_path, header)

    @property
    def _user_model(self) -> str | None:
        if self.config.user_strategy in NO_MODEL_USERS:
            return None
        return self.config.user_model

    async def _episode(self, provider: AgentProvider, key: Key) -> EpisodeRecord:
        task_id, trial = key
        task = self.plan.tasks[task_id]
        cfg = self.config
        meta: dict[str, Any] = {
            "agent_strategy": cfg.agent_strategy,
            "model": cfg.model,
            "user_strategy": cfg.user_strategy,
            "user_model": self._user_model,
            "started_at": now_iso(),
        }
        t0 = time.perf_counter()
        stage = "agent"
        try:
            adapter = provider.new_adapter()
            stage = "user"
            user = self._new_user()
            stage = "episode"
            scored = await run_task(
                self.plan.domain,
                task,
                task_id,
                adapter,
                user,
                trial=trial,
                max_steps=cfg.max_steps,
                max_tool_calls_per_turn=cfg.max_tool_calls_per_turn,
            )
            return record_from_episode(scored, task, **meta)
        except Exception as exc:  # one broken episode never stops the run
            return record_from_exception(
                task_id,
                trial,
                task,
                exc,
                source=stage,
                duration=time.perf_counter() - t0,
                **meta,
            )

    def _store(self, record: EpisodeRecord) -> None:
        self._records[record.key] = record
        self._ran += 1
        if self._log is not None:
            self._log.append(record)
        if self.observer is not None:
            self.observer.episode_done(record)

    async def _work(
        self, provider: AgentProvider, queue: deque[Key], slots: _ProviderSlots
    ) -> None:
        while queue:
            key = queue.popleft()
            async with slots.hold():
                record = await self._episode(provider, key)
            self._store(record)
            # An agent that never suspends (oracle) must still let Ctrl-C and the
            # other workers in between episodes.
            await asyncio.sleep(0)

    def final_records(self) -> list[EpisodeRecord]:
        """Latest record per planned (task, trial), ordered by trial then task selection."""
        position = {tid: i for i, tid in enumerate(self.plan.tasks)}
        keys = sorted(
            (k for k in self.plan.order if k in self._records),
            key=lambda k: (k[1], position[k[0]]),
        )
        return [self._records[k] for k in keys]

    def _finalize(self, interrupted: bool) -> RunOutcome:
        records = self.final_records()
        summary = summarize(records, self.config.num_trials, planned=len(self.plan.order))
        summary = {
            "run_name": self.plan.run_name,
            "finished": now_iso(),
            "interrupted": interrupted,
            "wall_time": time.perf_counter() - self._started,
            "episodes_run_now": self._ran,
            "task_data_hash": self.plan.task_hash,
            "config": self.config.public_dict(),
            "files": {
                "log": str(self.plan.log_path),
                "results": str(self.plan.results_path),
                "summary": str(self.plan.summary_path),
            },
            **summary,
        }
        OUTPUT_WRITERS[self.config.output_format](records, self.plan.log_path)
        write_json_atomic(self.plan.summary_path, summary)
        self.outcome = RunOutcome(
            plan=self.plan, records=records, summary=summary, ran=self._ran, interrupted=interrupted
        )
        return self.outcome

    async def run(self) -> RunOutcome:
        """Run every pending episode. On cancellation the finished ones are written
        (log, results, summary), `self.outcome` is set, and the cancellation propagates."""
        self._started = time.perf_counter()
        self._preflight_user()
        provider = self._provider or self._build_provider()
        try:
            self._log = self._open_log()
        except BaseException:
            with contextlib.suppress(Exception):
                await provider.aclose()
            raise
        pending = self.plan.pending
        queue: deque[Key] = deque(pending)
        slots = _ProviderSlots(self.config.provider_limits, self._provider_keys())
        if self.observer is not None:
            planned = set(self.plan.order)
            done = [r for k, r in self._records.items() if k in planned and not r.is_error]
            self.observer.started(len(self.plan.order), done)
        workers = [
            asyncio.create_task(self._work(provider, queue, slots))
            for _ in range(min(self.config.max_concurrency, len(pending)))
        ]
        interrupted = False
        try:
            await asyncio.gather(*workers)
        except BaseException:
            interrupted = True
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        finally:
            if self.observer is not None:
                self.observer.finished()
            with contextlib.suppress(Exception):
                await provider.aclose()
            await self._log.aclose()
            self._finalize(interrupted)
        assert self.outcome is not None
        return self.outcome

    def _provider_keys(self) -> list[str | None]:
        """Episode-level slots: a hosted agent is limited by its strategy name
        (`--provider-limit decibel=5`); model calls are capped per call in `tau_bench.llm`."""
        limits = self.config.provider_limits
        if limits or "tau_bench.llm" in sys.modules:  # also clears an earlier run's caps
            try:
                from tau_bench.llm import set_provider_limits
            except ImportError:
                pass
            else:
                set_provider_limits(limits)
        return [self.config.agent_strategy] if limits else []


async def run(config: RunConfig, observer: RunObserver | None = None) -> RunOutcome:
    """Prepare and run `config` (library entry point)."""
    return await Runner(prepare_run(config), observer).run()
