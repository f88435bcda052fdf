"""The async runner: tasks x trials through the episode loop, concurrently, resumably.

`prepare_run(config)` does everything that can fail on bad input (domain, split, task
selection, resume compatibility) before any file is written; `Runner(plan).run()` builds
the agent provider once, runs the pending (task, trial) pairs on at most
`max_concurrency` live episodes (`provider_limits` cap model calls per provider through
`tau_bench.llm`, and live episodes of a hosted agent named by its strategy),
appends each finished episode to the log, and at the end - or on cancellation (Ctrl-C) -
writes the τ-bench results file and the summary from everything finished so far.
One failing episode is recorded as an error and never stops the others. With
`workers` > 1 the episodes run in spawned processes that send their records back;
this process still writes every file (`_WorkerPool`; docs/running.md, "Concurrency").

Per episode, the runner derives a seed from (run seed, task id, trial)
(`tau_bench.config.episode_seed`) and gives it to the user simulator and, through
`SessionContext.metadata["seed"]`, to the agent; with `user_models` it picks the
episode's user model round-robin by its sample index (`RunPlan.sample_index`). A run
may span several domains (`env="retail,airline"`): task ids are then `"retail/12"`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import random
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tau_adapters.protocol import AdapterError, UserSimulator
from tau_adapters.registry import AgentProvider, UnknownAdapterError, build_provider
from tau_bench.config import (
    EvalConfig,
    RunConfig,
    RunConfigError,
    episode_seed,
    fingerprint_differences,
)
from tau_bench.domains import Domain, load_domain
from tau_bench.episode import run_task, session_for
from tau_bench.metrics import eval_metrics, summarize
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

TaskId = int | str  # an index into the split; "domain/index" in multi-domain runs
Key = tuple[TaskId, int]  # (task id, trial)
NO_MODEL_USERS = frozenset({"scripted", "human"})


@dataclass(frozen=True)
class TaskRef:
    """Where a run's task comes from: its domain and its index in that domain's list."""

    domain: str
    index: int


class RunObserver(Protocol):
    """Progress hooks (the CLI's progress bar); all optional no-ops by default."""

    def started(self, total: int, done: list[EpisodeRecord]) -> None: ...

    def episode_done(self, record: EpisodeRecord) -> None: ...

    def finished(self) -> None: ...


@dataclass
class RunPlan:
    """What a run will do, fully validated: tasks, the (task, trial) order, file names.

    `domain` is the first (usually only) domain; `domains` and `refs` say which domain
    each task id belongs to.
    """

    config: RunConfig
    domain: Domain
    tasks: dict[TaskId, Task]
    order: list[Key]
    task_hash: str
    run_name: str
    log_path: Path
    existing: dict[Key, EpisodeRecord] = field(default_factory=dict)
    resumed: bool = False
    source: str = ""
    domains: dict[str, Domain] = field(default_factory=dict)
    refs: dict[TaskId, TaskRef] = field(default_factory=dict)
    _positions: dict[TaskId, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.domains:
            self.domains = {self.domain.name: self.domain}
        if not self.refs:
            self.refs = {
                tid: TaskRef(self.domain.name, tid if isinstance(tid, int) else -1)
                for tid in self.tasks
            }
        self._positions = {tid: i for i, tid in enumerate(self.tasks)}

    def sample_index(self, key: Key) -> int:
        """The position of (task, trial) in the run's canonical order: trial by trial,
        tasks in selection order (`trial * len(tasks) + task position`), whatever the
        shuffle or the scheduling. It does not change when a resume adds trials."""
        task_id, trial = key
        return trial * len(self.tasks) + self._positions[task_id]

    def domain_of(self, task_id: TaskId) -> Domain:
        return self.domains[self.refs[task_id].domain]

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


def task_data_hash(tasks: dict[TaskId, Task]) -> str:
    """sha256 of the selected tasks' JSON (ids included): resume refuses a mismatch."""
    payload = json.dumps(
        [[tid, task.model_dump(mode="json")] for tid, task in sorted(tasks.items())],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _select(
    ids: list[int] | None, config: RunConfig, all_tasks: list[Task], source: str
) -> tuple[list[int], int]:
    """Indices into `all_tasks`: `ids` if given (None: the start/end range), and the
    range's end."""
    n = len(all_tasks)
    if n == 0:
        raise RunConfigError(f"{source} has no tasks")
    end = n if config.end_index == -1 else min(config.end_index, n)
    if ids is not None:
        bad = [t for t in ids if not 0 <= t < n]
        if bad:
            raise RunConfigError(f"task id {bad[0]} out of range for {source} (valid: 0-{n - 1})")
        return list(dict.fromkeys(ids)), end
    if not 0 <= config.start_index < end:
        raise RunConfigError(
            f"empty task range {config.start_index}-{end} for {source} ({n} tasks)"
        )
    return list(range(config.start_index, end)), end


def _ids_for(config: RunConfig, domain: str) -> list[int] | None:
    """The `task_ids` that select tasks of `domain`: plain ids select in every domain,
    `domain/N` only in its own. None when the run selects by range."""
    if not config.task_ids:
        return None
    out: list[int] = []
    for tid in config.task_ids:
        if isinstance(tid, int):
            out.append(tid)
            continue
        name, _, index = tid.partition("/")
        if name not in config.envs:
            raise RunConfigError(f"task id {tid!r} is not in this run's env ({config.env})")
        if name == domain:
            out.append(int(index))
    return out


def _select_tasks(
    config: RunConfig, domains: dict[str, Domain]
) -> tuple[dict[TaskId, Task], dict[TaskId, TaskRef], str, int]:
    """The run's tasks by id, where each comes from, a description, and the range end."""
    tasks: dict[TaskId, Task] = {}
    refs: dict[TaskId, TaskRef] = {}
    if config.tasks_file:
        if config.multi_domain:
            raise RunConfigError("--tasks-file takes a single --env (its tasks are one domain's)")
        name = config.envs[0]
        all_tasks = load_tasks(Path(config.tasks_file))
        source = f"tasks file {config.tasks_file}"
        ids, end = _select(_ids_for(config, name), config, all_tasks, source)
        for i in ids:
            tasks[i] = all_tasks[i]
            refs[i] = TaskRef(name, i)
        return tasks, refs, source, end
    sources, ends = [], []
    for name, domain in domains.items():
        all_tasks = domain.tasks(config.task_split)
        source = f"{name} {config.task_split}"
        wanted = _ids_for(config, name)
        if wanted == []:
            continue  # only other domains' tasks were named
        ids, end = _select(wanted, config, all_tasks, source)
        sources.append(source)
        ends.append(end)
        for i in ids:
            tid: TaskId = f"{name}/{i}" if config.multi_domain else i
            tasks[tid] = all_tasks[i]
            refs[tid] = TaskRef(name, i)
    if not tasks:
        raise RunConfigError(f"no tasks selected from {config.env}")
    return tasks, refs, ", ".join(sources), max(ends)


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
    domains = {name: load_domain(name, config.data_dir) for name in config.envs}
    domain = domains[config.envs[0]]
    tasks, refs, source, end = _select_tasks(config, domains)
    rng = random.Random(config.seed)
    order: list[Key] = []
    for trial in range(config.num_trials):
        trial_ids = list(tasks)
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
            domains=domains,
            refs=refs,
        )

    log_dir = Path(config.log_dir)
    stem = config.run_name or run_file_stem(
        agent_strategy=config.agent_strategy,
        model=config.model,
        temperature=config.temperature,
        start_index=config.start_index,
        end_index=end,
        user_model="+".join(m.split("/")[-1] for m in config.user_models or [config.user_model]),
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
        domains=domains,
        refs=refs,
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

    def _new_user(self, model: str | None = None, seed: int | None = None) -> UserSimulator:
        """A fresh user for one episode: user model `model`, seed `seed` (defaults: the
        config's user model and run seed)."""
        if self._user_factory is not None:
            return self._user_factory()
        return build_user(self.config.user_strategy, **self.config.user_options(model, seed))

    def _preflight_user(self) -> None:
        name = self.config.user_strategy
        try:
            for model in self.config.user_models or [self.config.user_model]:
                self._new_user(model)
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

    def user_model_for(self, key: Key) -> str:
        """The user model of (task, trial): round-robin over `user_models` by sample index."""
        return self.config.user_model_for(self.plan.sample_index(key))

    async def _episode(self, provider: AgentProvider, key: Key) -> EpisodeRecord:
        task_id, trial = key
        task = self.plan.tasks[task_id]
        ref = self.plan.refs[task_id]
        domain = self.plan.domains[ref.domain]
        cfg = self.config
        seed = episode_seed(cfg.seed, task_id, trial)
        user_model = self.user_model_for(key)
        meta: dict[str, Any] = {
            "agent_strategy": cfg.agent_strategy,
            "model": cfg.model,
            "user_strategy": cfg.user_strategy,
            "user_model": None if cfg.user_strategy in NO_MODEL_USERS else user_model,
            "started_at": now_iso(),
            "domain": ref.domain,
            "seed": seed,
        }
        t0 = time.perf_counter()
        stage = "agent"
        try:
            adapter = provider.new_adapter()
            stage = "user"
            user = self._new_user(user_model, seed)
            stage = "episode"
            # The session names the task by its index in its domain (session.domain
            # says which); the record keeps the run's id ("retail/12" across domains).
            session = session_for(
                domain,
                task,
                ref.index,
                trial,
                metadata={"seed": seed, "sample_index": self.plan.sample_index(key)},
            )
            scored = await run_task(
                domain,
                task,
                task_id,
                adapter,
                user,
                trial=trial,
                max_steps=cfg.max_steps,
                max_tool_calls_per_turn=cfg.max_tool_calls_per_turn,
                session=session,
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
        keys = sorted(
            (k for k in self.plan.order if k in self._records), key=self.plan.sample_index
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
        OUTPUT_WRITERS["tau-bench"](records, self.plan.log_path)
        if self.config.output_format == "mt-bench":
            summary["files"].update(self._write_mt_bench(records))
        write_json_atomic(self.plan.summary_path, summary)
        self.outcome = RunOutcome(
            plan=self.plan, records=records, summary=summary, ran=self._ran, interrupted=interrupted
        )
        return self.outcome

    def _write_mt_bench(self, records: list[EpisodeRecord]) -> dict[str, str]:
        """The MT-bench folder next to the log; a failure is reported in the summary's
        files (`mt_bench_error`) rather than losing the summary."""
        from tau_bench.analysis.mt_bench import write_mt_bench

        # Namespaced ids ("retail/12") are "retail-12" in its file names (write_mt_bench).
        try:
            folder = write_mt_bench(
                records,
                self.plan.log_path.parent,
                dataset=self.config.env,
                model=self.config.model or self.config.agent_strategy,
            )
        except Exception as exc:
            return {"mt_bench_error": f"{type(exc).__name__}: {exc}"}
        return {"mt_bench": str(folder)}

    async def run(self) -> RunOutcome:
        """Run every pending episode. On cancellation the finished ones are written
        (log, results, summary), `self.outcome` is set, and the cancellation propagates.

        With `workers` > 1 the episodes run in worker processes (`_run_in_workers`)."""
        if self.config.workers > 1:
            return await self._run_in_workers()
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

    # -- workers > 1 ----------------------------------------------------------------

    def _check_workers(self) -> None:
        """Spawned workers rebuild the agent from its entry point: an injected provider,
        user factory or in-process registration would silently not be there."""
        if self._provider is not None or self._user_factory is not None:
            raise RunConfigError(
                "workers > 1 needs the agent and user built from the config "
                "(an injected provider or user factory cannot be sent to worker processes)"
            )
        name = self.config.agent_strategy
        if not _is_entry_point(name):
            raise RunConfigError(
                f"agent strategy {name!r} is registered in this process only "
                "(tau_adapters.registry.register), so worker processes cannot build it: "
                "declare it as a 'tau_adapters' entry point, or run with workers=1"
            )

    async def _run_in_workers(self) -> RunOutcome:
        """The pending episodes split round-robin over `workers` spawned processes.

        This process stays the only writer (log, observer, results, summary); workers
        send each finished record over a queue. A worker that dies leaves its missing
        episodes out of the log (`--resume` re-runs them) and a line in
        `worker_errors`; on cancellation the workers are terminated and what finished
        is written, as with one process."""
        self._started = time.perf_counter()
        self._check_workers()
        self._preflight_user()
        provider = self._build_provider()  # fail fast on configuration, then close
        with contextlib.suppress(Exception):
            await provider.aclose()
        self._log = self._open_log()
        pending = self.plan.pending
        if self.observer is not None:
            planned = set(self.plan.order)
            done = [r for k, r in self._records.items() if k in planned and not r.is_error]
            self.observer.started(len(self.plan.order), done)
        pool = _WorkerPool(self.config, pending)
        interrupted = False
        try:
            await pool.run(lambda data: self._store(EpisodeRecord.from_dict(data)))
        except BaseException:
            interrupted = True
            raise
        finally:
            pool.stop(terminate=interrupted)
            if self.observer is not None:
                self.observer.finished()
            await self._log.aclose()
            outcome = self._finalize(interrupted)
            if pool.errors:
                outcome.summary["worker_errors"] = pool.errors
                write_json_atomic(self.plan.summary_path, outcome.summary)
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


# -- worker processes ----------------------------------------------------------------


def _is_entry_point(name: str) -> bool:
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


class _WorkerRunner(Runner):
    """A worker's runner: sends each record to the parent instead of storing it."""

    def __init__(self, plan: RunPlan, out: Any) -> None:
        super().__init__(plan)
        self._out = out

    def _store(self, record: EpisodeRecord) -> None:
        self._out.put(("record", record.to_dict()))

    async def run_keys(self, keys: list[Key]) -> None:
        provider = self._build_provider()
        try:
            slots = _ProviderSlots(self.config.provider_limits, self._provider_keys())
            queue: deque[Key] = deque(keys)
            await asyncio.gather(
                *(
                    self._work(provider, queue, slots)
                    for _ in range(min(self.config.max_concurrency, len(keys)))
                )
            )
        finally:
            with contextlib.suppress(Exception):
                await provider.aclose()
            if "tau_bench.llm" in sys.modules:
                from tau_bench.llm import aclose_clients

                with contextlib.suppress(Exception):
                    await aclose_clients()


def _worker_main(index: int, config_data: dict[str, Any], keys: list[Key], out: Any) -> None:
    """Entry point of a spawned worker: run `keys`, report, exit 0 (1 on failure).

    SIGINT is ignored: Ctrl-C reaches the whole process group, and the parent decides
    (it terminates the workers and writes what finished)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        config = RunConfig.model_validate(config_data)
        runner = _WorkerRunner(prepare_run(config), out)
        asyncio.run(runner.run_keys(keys))
    except BaseException as exc:
        out.put(("error", index, f"{type(exc).__name__}: {exc}"))
        out.close()
        out.join_thread()
        raise SystemExit(1) from None
    out.put(("done", index, None))
    out.close()
    out.join_thread()


class _WorkerPool:
    """N spawned workers over a round-robin split of the keys, and the queue they
    report on. `run` returns when every worker has finished or died."""

    POLL = 0.2  # seconds between liveness checks while waiting for records

    def __init__(self, config: RunConfig, keys: list[Key]) -> None:
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
                target=_worker_main,
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


async def run(config: RunConfig, observer: RunObserver | None = None) -> RunOutcome:
    """Prepare and run `config` (library entry point)."""
    return await Runner(prepare_run(config), observer).run()


# -- tau eval: one run per user model ------------------------------------------------


@dataclass
class EvalOutcome:
    config: EvalConfig
    outcomes: dict[str, RunOutcome]  # per user model
    report: dict[str, Any]
    path: Path
    interrupted: bool = False


def prepare_eval(config: EvalConfig, *, resume: bool = False) -> dict[str, RunPlan]:
    """One validated run plan per user model; `max_concurrency` is shared between them.

    Runs that already have a log are resumed with `resume`, and refused without it.
    """
    total = int(config.run.get("max_concurrency") or 1)
    n = len(config.user_models)
    plans: dict[str, RunPlan] = {}
    for i, model in enumerate(config.user_models):
        share = max(1, total // n + (1 if i < total % n else 0))
        log = config.folder / f"{config.run_name(model)}.jsonl"
        if log.exists() and not resume:
            raise RunConfigError(
                f"eval {config.name!r} already has results in {config.folder}; "
                "pass --resume to continue it, or give another name"
            )
        existing = str(log) if log.exists() else None
        plans[model] = prepare_run(config.run_config(model, max_concurrency=share, resume=existing))
    return plans


def eval_report(
    config: EvalConfig, outcomes: dict[str, RunOutcome], interrupted: bool = False
) -> dict[str, Any]:
    """The eval's JSON: settings, the runs' files, and `tau_bench.metrics.eval_metrics`."""
    groups = {model: outcome.records for model, outcome in outcomes.items()}
    first = next(iter(outcomes.values()), None)
    settings = first.plan.config.public_dict() if first else {}
    for key in ("user_model", "user_model_provider", "run_name", "resume", "log_dir"):
        settings.pop(key, None)
    settings["max_concurrency"] = int(config.run.get("max_concurrency") or 1)
    return {
        "name": config.name,
        "created": now_iso(),
        "interrupted": interrupted,
        "user_models": list(config.user_models),
        "num_samples": config.num_samples,
        "settings": settings,
        "runs": {
            model: {
                "log": str(outcome.plan.log_path),
                "results": str(outcome.plan.results_path),
                "summary": str(outcome.plan.summary_path),
            }
            for model, outcome in outcomes.items()
        },
        **eval_metrics(groups, config.k_values),
    }


async def run_eval(
    config: EvalConfig,
    plans: dict[str, RunPlan],
    observers: Mapping[str, RunObserver] | None = None,
) -> EvalOutcome:
    """Run the user models' plans concurrently and write the eval report.

    On cancellation every run writes what finished (as `Runner.run` does), the report
    is written from it with `interrupted: true`, and the cancellation propagates.
    """
    runners = {m: Runner(plan, (observers or {}).get(m)) for m, plan in plans.items()}
    tasks = [asyncio.ensure_future(r.run()) for r in runners.values()]
    interrupted = False
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        interrupted = True
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    finally:
        outcomes = {m: r.outcome for m, r in runners.items() if r.outcome is not None}
        report = eval_report(config, outcomes, interrupted)
        if outcomes:
            write_json_atomic(config.output_path, report)
    return EvalOutcome(config, outcomes, report, config.output_path, interrupted)
