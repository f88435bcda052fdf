"""The async runner: a prepared plan's (task, trial) pairs through the episode loop.

`Runner(plan).run()` builds the agent provider once, runs the pending pairs on at most
`max_concurrency` live episodes (`provider_limits` cap model calls per provider through
`tau_bench.llm`, and live episodes of a hosted agent named by its strategy), appends
each finished episode to the log, and at the end - or on cancellation (Ctrl-C) - writes
the τ-bench results file and the summary from everything finished so far. One failing
episode is recorded as an error and never stops the others. With `backend="ray"` (or
`workers` > 1: a local Ray) the episodes run on Ray workers
(`tau_bench.runner.backends.ray`); this process still writes every file.

Per episode, the runner derives a seed from (run seed, task id, trial)
(`tau_bench.config.episode_seed`) and gives it to the user simulator and, through
`SessionContext.metadata["seed"]`, to the agent; with `user_models` it picks the
episode's user model round-robin by its sample index (`RunPlan.sample_index`). When the
provider asks for server-side tools (`wants_tool_server`), one tool server serves the
run's episodes and each session gets its endpoint (`SessionContext.tool_endpoint`).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from tau_adapters.protocol import AdapterError, ToolServerRequest, UserSimulator
from tau_adapters.redaction import mask_encoded
from tau_adapters.registry import AgentProvider, UnknownAdapterError, build_provider
from tau_bench.analysis.clean_subset import summary_section as clean_subset_section
from tau_bench.config import RunConfig, RunConfigError, episode_seed
from tau_bench.cost import episode_cost
from tau_bench.episode import ScoredEpisode, judge_cut_off, run_task, session_for
from tau_bench.manifest import apply_display_name, build_manifest, display_name
from tau_bench.metrics import summarize
from tau_bench.results import (
    OUTPUT_WRITERS,
    EpisodeRecord,
    ResultsLog,
    encode_record,
    now_iso,
    record_from_episode,
    record_from_exception,
    write_json_atomic,
)
from tau_bench.results_log import LogFileError, LogWriteError
from tau_bench.runner.breaker import CircuitBreaker
from tau_bench.runner.collector import run_pace
from tau_bench.runner.deadlines import (
    CANCEL_GRACE,
    EpisodeDeadline,
    EpisodeTimeoutError,
    bounded,
    user_with_deadline,
    with_turn_deadline,
)
from tau_bench.runner.distributed import run_on_workers
from tau_bench.runner.plan import Key, RunPlan, prepare_run
from tau_bench.runner.types import (
    ProviderSlots,
    RunObserver,
    RunOutcome,
    RunTerminated,
    config_secrets,
    provider_problem,
    provider_secrets,
)
from tau_bench.users import UnknownUserStrategyError, build_user

ACLOSE_DEADLINE = 60.0
"""Seconds the agent provider has to close after the last episode (then the results are
written anyway, with `agent_close_error` in the summary)."""

TERMINATED = 128 + signal.SIGTERM
"""Exit status of a run that SIGTERM stopped (143), as the shell reports a process it
killed: what `timeout`, `docker stop` and Kubernetes expect."""

if TYPE_CHECKING:
    from tau_bench.toolserver.host import ToolServerHost

NO_MODEL_USERS = frozenset({"scripted", "human"})


T = TypeVar("T")


class RunWriteError(Exception):
    """A file of the run could not be written (a full disk, a file size limit).
    `log_error`: the results log failed, so the run started no new episode and
    `log_error.unsaved` finished episodes are not in it (`--resume` runs them again);
    `output_error`: the results or summary file failed (the log holds every finished
    episode: `--resume` writes them again). `runner.outcome` is set all the same."""

    def __init__(self, log_error: LogWriteError | None, output_error: str | None) -> None:
        parts = [str(log_error) if log_error else None, output_error]
        super().__init__("; ".join(part for part in parts if part))
        self.log_error = log_error
        self.output_error = output_error


class SigtermCancels:
    """SIGTERM as Ctrl-C for one run: it cancels the run's task once, so the finished
    episodes are written, and the run raises `RunTerminated`. Once the run is writing
    its files (`disarm`) a SIGTERM no longer cancels anything - the files are finished,
    then `RunTerminated` is raised all the same. Only when asked (`tau run`: a program
    with several runs, or its own idea of SIGTERM, is left alone), in the main thread of
    an event loop that takes signal handlers, and while SIGTERM has its default action
    (an embedding program's own handler is kept). `claim` takes SIGTERM back from Ray,
    whose `ray.init` puts its own handlers in (one exits at once, a native one prints a
    stack dump)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.received = False
        self._armed = True
        self._task: asyncio.Task[Any] | None = None

    def _on_sigterm(self) -> None:
        if self.received or self._task is None:
            return
        self.received = True
        if self._armed:
            self._task.cancel()

    def disarm(self) -> None:
        """From now on a SIGTERM is noted, not acted on: the run is writing its files."""
        self._armed = False

    def claim(self) -> None:
        """(Re)install the handler, if this run owns SIGTERM."""
        if self._task is not None:
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, self._on_sigterm)

    @contextlib.contextmanager
    def handling(self) -> Iterator[None]:
        if (
            self.enabled
            and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        ):
            self._task = asyncio.current_task()
            try:
                self.claim()
            except (NotImplementedError, RuntimeError):  # not a Unix loop
                self._task = None
        try:
            yield
        finally:
            if self._task is not None:
                self._task = None
                asyncio.get_running_loop().remove_signal_handler(signal.SIGTERM)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)  # Ray's, if it put one in

    async def terminating(self, work: Awaitable[T]) -> T:
        """`work`'s result, SIGTERM `handling` meanwhile: a SIGTERM cancels `work` once
        (which writes what finished) and then raises `RunTerminated`, also when it came
        while the files were being written (they are complete then)."""
        with self.handling():
            try:
                outcome = await work
            except asyncio.CancelledError:
                if not self.received:
                    raise
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
                raise RunTerminated("terminated (SIGTERM)") from None
            if self.received:
                raise RunTerminated("terminated (SIGTERM)")
        return outcome


class Runner:
    """Runs a prepared plan; see the module docstring."""

    def __init__(
        self,
        plan: RunPlan,
        observer: RunObserver | None = None,
        provider: AgentProvider | None = None,
        user_factory: Callable[[], UserSimulator] | None = None,
        *,
        sigterm_stops: bool = False,
    ) -> None:
        """`provider` and `user_factory` replace the ones the config names (embedding,
        benchmarks); the defaults build them from `agent_strategy` / `user_strategy`.
        `sigterm_stops`: SIGTERM stops the run as Ctrl-C does (`RunTerminated`), for a
        program whose one run this is (`tau run`)."""
        self.plan = plan
        self.config = plan.config
        self.observer = observer
        self._provider = provider
        self._user_factory = user_factory
        self._records: dict[Key, EpisodeRecord] = dict(plan.existing)
        self._log: ResultsLog | None = None
        self._ran = 0
        self._started = 0.0
        self._tool_host: ToolServerHost | None = None
        self.outcome: RunOutcome | None = None
        self.manifest: dict[str, Any] = {}
        self.breaker = CircuitBreaker(self.config.max_consecutive_failures)
        self.worker_stats: list[dict[str, Any]] = []  # per Ray worker (benchmarks)
        self._config_secrets: list[str] | None = None
        self.close_problem: str | None = None  # the provider's aclose failed or hung
        self.log_error: LogWriteError | None = None  # the results log could not be written
        self.output_error: str | None = None  # the results or summary file could not
        self.sigterm = SigtermCancels(sigterm_stops)

    def secrets(self, provider: AgentProvider) -> list[str]:
        """What every record and check message of this run masks: the provider's secrets
        and the user simulators' and judge's (`runner.types.config_secrets`, gathered
        once: a model may echo its API key into a user turn or a judge's reasoning)."""
        if self._config_secrets is None:
            self._config_secrets = config_secrets(self.config)
        return [*provider_secrets(provider), *self._config_secrets]

    # The pieces that can fail on configuration run before any file is touched.
    def _build_provider(self) -> AgentProvider:
        name = self.config.agent_strategy
        try:
            provider = build_provider(name, self.config.adapter_options())
        except UnknownAdapterError as exc:
            raise RunConfigError(str(exc)) from None
        except ImportError as exc:
            raise RunConfigError(
                self._mask(f"agent strategy {name!r} is not available: {exc}")
            ) from None
        except (AdapterError, ValueError, KeyError) as exc:
            raise RunConfigError(self._mask(f"agent strategy {name!r}: {exc}")) from None
        except Exception as exc:  # a third-party builder's own bug: one line, not a traceback
            raise RunConfigError(
                self._mask(f"agent strategy {name!r} failed to build: {type(exc).__name__}: {exc}")
            ) from None
        problem = provider_problem(provider)
        if problem is not None:
            raise RunConfigError(f"agent strategy {name!r}: {problem}")
        return provider

    def _mask(self, text: str) -> str:
        """`text` with the run's secrets masked (an adapter's error may quote its key)."""
        if self._config_secrets is None:
            self._config_secrets = config_secrets(self.config)
        return mask_encoded(text, self._config_secrets)

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
        try:
            return self._open_log_file()
        except LogFileError as exc:  # in use by another process
            raise RunConfigError(str(exc)) from None
        except OSError as exc:  # a --log-dir that is a file, read-only, on a full disk...
            where = self.plan.log_path.parent
            raise RunConfigError(
                f"cannot write results in {where}: {exc.strerror or exc} (check --log-dir)"
            ) from None

    def _open_log_file(self) -> ResultsLog:
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
            "manifest": self.manifest,
        }
        return ResultsLog.create(plan.log_path, header)

    def _describe(self, provider: AgentProvider) -> None:
        """The agent's display name into the run name; the run manifest (`tau_bench.manifest`)."""
        apply_display_name(self.plan, display_name(provider))
        self.manifest = build_manifest(self.plan, provider)
        self.plan.check_agent(self.manifest)  # a resumed run's agent must be the logged one

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
        deadline = EpisodeDeadline(cfg.episode_timeout)  # the adapter's close pauses it
        finished: list[ScoredEpisode] = []  # the conversation, once it is being scored
        try:
            adapter = with_turn_deadline(provider.new_adapter(), cfg.turn_timeout, deadline)
            stage = "user"
            user = self._new_user(user_model, seed)
            if cfg.user_strategy != "human":  # a person may think as long as they like
                user = user_with_deadline(user, cfg.turn_timeout)
            stage = "episode"
            # The session names the task by its index in its domain (session.domain
            # says which); the record keeps the run's id ("retail/12" across domains).
            session = session_for(
                domain,
                task,
                ref.index,
                trial,
                metadata={
                    "seed": seed,
                    "sample_index": self.plan.sample_index(key),
                    # hosted agents that look the task up (emulators' oracle) need its split
                    "task_split": cfg.task_split,
                },
            )
            scored = await deadline.run(
                run_task(
                    domain,
                    task,
                    task_id,
                    adapter,
                    user,
                    trial=trial,
                    max_steps=cfg.max_steps,
                    max_tool_calls_per_turn=cfg.max_tool_calls_per_turn,
                    session=session,
                    tool_host=self._tool_host,
                    on_scoring=finished.append,
                )
            )
            record = record_from_episode(scored, task, secrets=self.secrets(provider), **meta)
        except Exception as exc:  # one broken episode never stops the run
            if isinstance(exc, EpisodeTimeoutError) and finished:  # the judge was cut off
                exc = judge_cut_off(finished[0], cfg.episode_timeout)
            record = record_from_exception(
                task_id,
                trial,
                task,
                exc,
                source="agent" if isinstance(exc, EpisodeTimeoutError) else stage,
                duration=time.perf_counter() - t0,
                secrets=self.secrets(provider),
                **meta,
            )
        record.warnings.extend(deadline.warnings)  # a close that outlived the deadline
        return record

    def _price(self, record: EpisodeRecord) -> None:
        if record.cost is None:
            record.cost = episode_cost(record, self.config.platform_price_per_request)

    def _log_line(self, record: EpisodeRecord) -> bytes:
        """The record priced and encoded as the log stores it (a Ray worker's output)."""
        self._price(record)
        return encode_record(record)

    def _store(self, record: EpisodeRecord, line: bytes | None = None) -> None:
        """Keep a finished record and append it to the log: `line`, when given, is the
        record already encoded (by a Ray worker)."""
        self._price(record)
        self._records[record.key] = record
        self._ran += 1
        if self._log is not None:
            self._log.append(record, line)
        if self.observer is not None:
            self.observer.episode_done(record)

    def _finish(self, record: EpisodeRecord, line: bytes | None = None) -> bool:
        """Store a finished episode and count it on the circuit breaker (both backends
        come through here, in the order episodes finish): True when the run must stop
        (the breaker tripped, or the log could not be written)."""
        self._store(record, line)
        return self.breaker.observe(record) or self.log_failed()

    def log_failed(self) -> bool:
        """The results log could not be written (a full disk): start no new episode, as
        each would be lost too; the ones running finish and stay in memory."""
        return self._log is not None and self._log.failure is not None

    async def _work(self, provider: AgentProvider, queue: deque[Key], slots: ProviderSlots) -> None:
        while queue and not self.log_failed():
            key = queue.popleft()
            async with slots.hold():
                record = await self._episode(provider, key)
            if self._finish(record):
                queue.clear()  # no new episodes; the running ones finish
            # An agent that never suspends (oracle) must still let Ctrl-C and the
            # other workers in between episodes.
            await asyncio.sleep(0)

    def final_records(self) -> list[EpisodeRecord]:
        """Latest record per planned (task, trial), ordered by trial then task selection."""
        keys = sorted(
            (k for k in self.plan.order if k in self._records), key=self.plan.sample_index
        )
        return [self._records[k] for k in keys]

    async def close_log(self) -> None:
        """Close the log (everything queued on disk); a write that failed is kept in
        `log_error`, not raised: the results and summary are still written."""
        if self._log is None:
            return
        try:
            await self._log.aclose()
        except LogWriteError as exc:
            self.log_error = exc

    def _finalize(self, interrupted: bool, worker_errors: list[str] | None = None) -> RunOutcome:
        """The outcome, and the results and summary files written from it (a file that
        cannot be written is kept in `output_error`; the log holds the records)."""
        records = self.final_records()
        summary = summarize(
            records,
            self.config.num_trials,
            planned=len(self.plan.order),
            superseded=self.plan.superseded(self._records),
        )
        summary = {
            "run_name": self.plan.run_name,
            "finished": now_iso(),
            "interrupted": interrupted,
            "wall_time": time.perf_counter() - self._started,
            "episodes_run_now": self._ran,
            "task_data_hash": self.plan.task_hash,
            "manifest": self.manifest,
            "config": self.config.public_dict(),
            "files": {
                "log": str(self.plan.log_path),
                "results": str(self.plan.results_path),
                "summary": str(self.plan.summary_path),
            },
            **summary,
            **clean_subset_section(records, self.config.env, self.config.num_trials),
            **self.breaker.summary_section(),
            **({"agent_close_error": self.close_problem} if self.close_problem else {}),
            **({"log_write_error": self._log_problem()} if self.log_error else {}),
            **({"worker_errors": worker_errors} if worker_errors else {}),
        }
        self.outcome = RunOutcome(
            plan=self.plan, records=records, summary=summary, ran=self._ran, interrupted=interrupted
        )
        self._write_outputs(records, summary)
        return self.outcome

    def _log_problem(self) -> str:
        """What the summary says when the log could not be written."""
        assert self.log_error is not None
        return (
            f"{self.log_error}; the run was stopped, {self.log_error.unsaved} finished "
            "episode(s) are not in the log (--resume runs them again)"
        )

    def _write_outputs(self, records: list[EpisodeRecord], summary: dict[str, Any]) -> None:
        """`<run-name>.json` and `.summary.json`. One that cannot be written (a full
        disk) is kept in `output_error` rather than raised: the log is the source of
        truth, and `--resume` writes both again from it."""
        writes: list[tuple[Path, Callable[[], object]]] = [
            (
                self.plan.results_path,
                lambda: OUTPUT_WRITERS["tau-bench"](records, self.plan.log_path),
            ),
            (self.plan.summary_path, lambda: write_json_atomic(self.plan.summary_path, summary)),
        ]
        for target, write in writes:  # each tried: a small summary may fit where results did not
            try:
                write()
            except OSError as exc:
                self.output_error = self.output_error or (
                    f"cannot write {target}: {exc.strerror or exc}"
                )

    def raise_write_error(self) -> None:
        """`RunWriteError` when a file of the run could not be written."""
        if self.log_error is not None or self.output_error is not None:
            raise RunWriteError(self.log_error, self.output_error)

    async def run(self) -> RunOutcome:
        """Run every pending episode. On cancellation the finished ones are written
        (log, results, summary), `self.outcome` is set, and the cancellation propagates;
        SIGTERM does the same and raises `RunTerminated` (`SigtermCancels`). A file that
        could not be written (a full disk) raises `RunWriteError` once everything that
        could be written was, `self.outcome` set.

        With the Ray backend the episodes run on Ray workers (`runner.distributed`).
        The cycle collector runs at a run's pace meanwhile (`runner.collector`), and the
        run's model calls, its pre-flight's included, take its `--llm-path`: its own,
        beside other runs of the process (`tau serve`)."""
        from tau_bench.llm.direct import run_llm_path

        with run_pace(), run_llm_path(self.config.llm_path):
            outcome = await self.sigterm.terminating(self._run())
        self.raise_write_error()
        return outcome

    async def _run(self) -> RunOutcome:
        cfg = self.config
        if cfg.on_ray:
            return await run_on_workers(self)
        self._started = time.perf_counter()
        self._preflight_user()
        provider = self._provider or self._build_provider()
        try:
            self._describe(provider)
            await self._preflight(provider)
            await self._start_tool_server(provider)
            self._log = self._open_log()
        except BaseException:
            await self._release(provider)
            raise
        pending = self.plan.pending
        queue: deque[Key] = deque(pending)
        slots = self._episode_slots(self._provider_keys())
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
            self.sigterm.disarm()  # the episodes are being stopped: let them
            for w in workers:
                w.cancel()
            await _stop_workers(workers)
            raise
        finally:
            self.sigterm.disarm()
            if self.observer is not None:
                self.observer.finished()
            await self._release(provider)
            await self.close_log()
            self._finalize(interrupted)
        assert self.outcome is not None
        return self.outcome

    async def _preflight(self, provider: AgentProvider) -> None:
        """Check agent, users and judge once before any episode (`runner.preflight`)."""
        if self.config.skip_preflight or self._user_factory is not None:
            return
        from tau_bench.runner.preflight import preflight

        await preflight(
            self.config,
            provider,
            secrets=self.secrets(provider),
            tasks=list(self.plan.tasks.values()),
        )

    async def _start_tool_server(self, provider: AgentProvider) -> None:
        """Serve the episodes' tools when the provider's agent calls them itself."""
        host = None
        request = getattr(provider, "tool_server", None)
        if isinstance(request, ToolServerRequest):
            from tau_bench.toolserver.host import ToolServerHost  # the `http` extra

            host = ToolServerHost(request)
            try:
                await asyncio.to_thread(host.start)
            except OSError as exc:
                raise RunConfigError(f"cannot start the tool server: {exc}") from None
        self._tool_host = host

    async def _release(self, provider: AgentProvider) -> None:
        """Close the provider within `ACLOSE_DEADLINE`: a close that hangs or fails must
        not keep the finished episodes from their results and summary files."""
        try:  # `bounded`: an aclose that swallows its cancellation must not hold the run
            await bounded(provider.aclose(), ACLOSE_DEADLINE, TimeoutError())
        except TimeoutError:
            self.close_problem = f"the agent provider did not close within {ACLOSE_DEADLINE:.0f} s"
        except Exception as exc:
            self.close_problem = self._mask(
                f"the agent provider failed to close: {type(exc).__name__}: {exc}"
            )
        host, self._tool_host = self._tool_host, None
        if host is not None:
            await asyncio.to_thread(host.stop)

    def _episode_slots(self, keys: list[str | None]) -> ProviderSlots:
        """The live-episode caps of the run's hosted agent (`_provider_keys`)."""
        return ProviderSlots(self.config.provider_limits, keys)

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


INTERRUPT_GRACE = 2 * CANCEL_GRACE + 5.0
"""Seconds cancelled episode workers have to end (each adapter call they wait on is
stopped within `CANCEL_GRACE`) before the run writes its files without them."""


async def _stop_workers(workers: list[asyncio.Task[Any]]) -> None:
    """Wait, at most `INTERRUPT_GRACE`, for cancelled workers to end; a second Ctrl-C or a
    close still running must not keep the finished episodes from their files."""
    done, _ = await asyncio.wait(workers, timeout=INTERRUPT_GRACE)
    for task in done:
        if not task.cancelled():
            task.exception()  # read: asyncio would log it as never retrieved


async def run(config: RunConfig, observer: RunObserver | None = None) -> RunOutcome:
    """Prepare and run `config` (library entry point)."""
    return await Runner(prepare_run(config), observer).run()
