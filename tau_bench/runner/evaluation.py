"""`tau eval`: one run per user model, concurrently, and the eval report (pass@k, pass^k)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau_bench.analysis.variance import decompose_groups
from tau_bench.config import EvalConfig, RunConfigError, default_ks
from tau_bench.metrics import eval_metrics
from tau_bench.output_files import output_problem, same_file
from tau_bench.records import EpisodeRecord, now_iso
from tau_bench.results import write_json_atomic
from tau_bench.results_log import LogWriteError
from tau_bench.runner.core import (
    Runner,
    RunObserver,
    RunOutcome,
    RunWriteError,
    SigtermCancels,
)
from tau_bench.runner.plan import RunPlan, check_log_files, prepare_run, with_trials
from tau_bench.runner.types import ProviderSlots


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
    Every run gets the same number of samples (`same_samples`).
    """
    total = int(config.run.get("max_concurrency") or 1)
    n = len(config.user_models)
    plans: dict[str, RunPlan] = {}
    for i, model in enumerate(config.user_models):
        share = max(1, total // n + (1 if i < total % n else 0))
        log = config.folder / f"{config.run_name(model)}.jsonl"
        check_log_files(config.folder, config.run_name(model))  # before `exists` can fail
        if log.exists() and not resume:
            raise RunConfigError(
                f"eval {config.name!r} already has results in {config.folder}; "
                "pass --resume to continue it, or give another name"
            )
        existing = str(log) if log.exists() else None
        plans[model] = prepare_run(config.run_config(model, max_concurrency=share, resume=existing))
    plans = same_samples(plans)
    _check_output(config.output_path, plans)  # prepare_run writes nothing: still in time
    return plans


def same_samples(plans: Mapping[str, RunPlan]) -> dict[str, RunPlan]:
    """Every user model's plan with the most samples any has: a resumed run keeps every
    trial its log holds (as `tau run --resume` does), so an eval resumed with fewer
    `--num-samples`, or with a user model added, would otherwise compare models on
    different numbers of samples."""
    samples = max((p.config.num_trials for p in plans.values()), default=1)
    return {
        model: plan if plan.config.num_trials == samples else with_trials(plan, samples)
        for model, plan in plans.items()
    }


def _check_output(path: Path, plans: Mapping[str, RunPlan]) -> None:
    """Refuse an `--output` the report could not be written to, or must not replace (a
    device, one of the eval's own run files), before any episode runs: the report is
    written last, and an unusable path lost it after the whole eval."""
    problem = output_problem(path, "--output")
    if problem is not None:
        raise RunConfigError(problem)
    for model, plan in plans.items():
        for own in (plan.log_path, plan.results_path, plan.summary_path):
            if same_file(path, Path(own)):
                raise RunConfigError(
                    f"--output {path} is {own}, a file of the eval's run for user model "
                    f"{model}: choose another output"
                )


def eval_report(
    config: EvalConfig, outcomes: dict[str, RunOutcome], interrupted: bool = False
) -> dict[str, Any]:
    """The eval's JSON: settings, the runs' files, and `tau_bench.metrics.eval_metrics`.

    `num_samples` and the default ks are the runs' own (`same_samples` may have raised
    the config's to what a resumed log holds)."""
    groups = {model: outcome.records for model, outcome in outcomes.items()}
    first = next(iter(outcomes.values()), None)
    samples = max((o.plan.config.num_trials for o in outcomes.values()), default=config.num_samples)
    ks = sorted(set(config.ks)) if config.ks else default_ks(samples)
    settings = first.plan.config.public_dict() if first else {}
    for key in ("user_model", "user_model_provider", "run_name", "resume", "log_dir"):
        settings.pop(key, None)
    settings["max_concurrency"] = int(config.run.get("max_concurrency") or 1)
    return {
        "name": config.name,
        "created": now_iso(),
        "interrupted": interrupted,
        "user_models": list(config.user_models),
        "num_samples": samples,
        "settings": settings,
        "runs": {
            model: {
                "log": str(outcome.plan.log_path),
                "results": str(outcome.plan.results_path),
                "summary": str(outcome.plan.summary_path),
            }
            for model, outcome in outcomes.items()
        },
        **eval_metrics(groups, ks),
        "variance": decompose_groups(groups),  # the same code as tau compare --by-user-model
    }


async def run_eval(
    config: EvalConfig,
    plans: dict[str, RunPlan],
    observers: Mapping[str, RunObserver] | None = None,
    *,
    sigterm_stops: bool = False,
) -> EvalOutcome:
    """Run the user models' plans concurrently and write the eval report (`EvalRun`)."""
    return await EvalRun(config, plans, observers, sigterm_stops=sigterm_stops).run()


class EvalRun:
    """An eval: one run per user model, run concurrently, then the report.

    On cancellation (Ctrl-C) every run writes what finished (as `Runner.run` does), the
    report is written from it with `interrupted: true`, and the cancellation propagates.
    With `sigterm_stops` (`tau eval`: the program's one eval) SIGTERM does the same and
    raises `RunTerminated`, as `tau run` does. A file that cannot be written (a full disk)
    stops every run from starting episodes, and `RunWriteError` is raised once every file
    that could be written was. However `run` ends, `outcome` (when any run started),
    `runners` and `report_error` say what was kept, for the caller's last line.
    """

    def __init__(
        self,
        config: EvalConfig,
        plans: dict[str, RunPlan],
        observers: Mapping[str, RunObserver] | None = None,
        *,
        sigterm_stops: bool = False,
    ) -> None:
        self.config = config
        self.sigterm = SigtermCancels(sigterm_stops)
        plans = same_samples(plans)  # prepare_eval's already are; a caller's own may not be
        self._observers = {
            model: _EvalObserver(self.sigterm, (observers or {}).get(model)) for model in plans
        }
        self.runners = {
            model: _EvalRunner(plan, self._observers[model]) for model, plan in plans.items()
        }
        slots: list[ProviderSlots] = []  # filled by the first run to start
        for runner in self.runners.values():
            runner.siblings = tuple(self.runners.values())
            runner.shared_slots = slots
        self.outcome: EvalOutcome | None = None
        self.report_error: str | None = None  # the report could not be written

    async def run(self) -> EvalOutcome:
        outcome = await self.sigterm.terminating(self._run())
        self.raise_write_error()
        return outcome

    async def _run(self) -> EvalOutcome:
        on_ray = sum(1 for r in self.runners.values() if r.config.on_ray)
        if not on_ray:
            return await self._run_all()
        from tau_bench.runner.backends.ray import ray_for_runs

        with ray_for_runs(on_ray):  # the runs run at once: one Ray, sized for them all
            return await self._run_all()

    async def _run_all(self) -> EvalOutcome:
        tasks = {m: asyncio.ensure_future(r.run()) for m, r in self.runners.items()}
        interrupted = False
        try:
            await _all_or_first_failure(list(tasks.values()))
        except BaseException:
            interrupted = True
            self.sigterm.disarm()  # the runs are being stopped: let them
            for model, task in tasks.items():
                if not self._observers[model].writing:  # a run writing its files finishes
                    task.cancel()
            await asyncio.gather(*tasks.values(), return_exceptions=True)
            raise
        finally:
            self.sigterm.disarm()
            self._write_report(interrupted)
        assert self.outcome is not None
        return self.outcome

    def _write_report(self, interrupted: bool) -> None:
        """The report, `interrupted` when any episode was left unrun (Ctrl-C, SIGTERM, a
        log that could not be written); one that cannot be written is kept in
        `report_error`: the runs' logs hold every finished episode, `--resume` rewrites it."""
        outcomes = {m: r.outcome for m, r in self.runners.items() if r.outcome is not None}
        interrupted = interrupted or any(r.log_error for r in self.runners.values())
        report = eval_report(self.config, outcomes, interrupted)
        path = self.config.output_path
        if outcomes:
            try:
                write_json_atomic(path, report)
            except OSError as exc:
                self.report_error = f"cannot write {path}: {exc.strerror or exc}"
        self.outcome = EvalOutcome(self.config, outcomes, report, path, interrupted)

    @property
    def log_errors(self) -> list[LogWriteError]:
        """The runs' logs that could not be written (their runs stopped)."""
        return [r.log_error for r in self.runners.values() if r.log_error is not None]

    @property
    def output_errors(self) -> list[str]:
        """The runs' results or summary files, and the report, that could not be written."""
        outputs = [r.output_error for r in self.runners.values() if r.output_error is not None]
        return outputs + ([self.report_error] if self.report_error else [])

    def raise_write_error(self) -> None:
        """`RunWriteError` (the first of each kind) when a file of the eval was not written."""
        logs, outputs = self.log_errors, self.output_errors
        if logs or outputs:
            raise RunWriteError(logs[0] if logs else None, outputs[0] if outputs else None)


async def _all_or_first_failure(tasks: Sequence[asyncio.Future[RunOutcome]]) -> None:
    """Until every run has ended, or one failed (its error is raised: the caller stops
    the others). A run whose files could not be written (`RunWriteError`) has ended as
    planned: the others end too, starting no new episode (`_EvalRunner.log_failed`)."""
    pending = set(tasks)
    while pending:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if task.cancelled() or not isinstance(task.exception(), RunWriteError):
                task.result()


class _EvalRunner(Runner):
    """A user model's run in an eval. The eval's runs share a disk: once any of them
    cannot write its log, none starts another episode (each would be lost too), as
    `tau run` stops; the episodes running finish and are written where they can be."""

    siblings: tuple[Runner, ...] = ()  # the eval's runs (none in a Ray worker's runner)
    shared_slots: list[ProviderSlots] | None = None  # the eval's one, once made (`EvalRun`)

    def log_failed(self) -> bool:
        return Runner.log_failed(self) or any(Runner.log_failed(r) for r in self.siblings)

    def _episode_slots(self, keys: list[str | None]) -> ProviderSlots:
        """One set of live-episode caps for the whole eval: its runs use the same agent,
        so `--provider-limit decibel=5` is 5 live sessions, not 5 per user model."""
        if self.shared_slots is None:
            return Runner._episode_slots(self, keys)
        if not self.shared_slots:
            self.shared_slots.append(Runner._episode_slots(self, keys))
        return self.shared_slots[0]


class _EvalObserver:
    """A run's observer in an eval, forwarding to the caller's. It takes SIGTERM back for
    the eval when the run has `started` (after its Ray backend: `ray.init` puts its own
    SIGTERM handlers in, one of which exits at once), and notes when the run is `writing`
    its files (`finished`): Ctrl-C and SIGTERM leave such a run alone, as `tau run` does,
    rather than cut its results and summary off."""

    def __init__(self, sigterm: SigtermCancels, inner: RunObserver | None) -> None:
        self.sigterm = sigterm
        self.inner = inner
        self.writing = False

    def started(self, total: int, done: list[EpisodeRecord]) -> None:
        self.sigterm.claim()
        if self.inner is not None:
            self.inner.started(total, done)

    def episode_done(self, record: EpisodeRecord) -> None:
        if self.inner is not None:
            self.inner.episode_done(record)

    def finished(self) -> None:
        self.writing = True
        if self.inner is not None:
            self.inner.finished()
