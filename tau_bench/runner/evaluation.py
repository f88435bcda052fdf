"""`tau eval`: one run per user model, concurrently, and the eval report (pass@k, pass^k)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau_bench.analysis.variance import decompose_groups
from tau_bench.config import EvalConfig, RunConfigError, default_ks
from tau_bench.metrics import eval_metrics
from tau_bench.output_files import output_problem, same_file
from tau_bench.records import now_iso
from tau_bench.results import write_json_atomic
from tau_bench.runner.core import Runner, RunObserver, RunOutcome
from tau_bench.runner.plan import RunPlan, prepare_run, with_trials


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
) -> EvalOutcome:
    """Run the user models' plans concurrently and write the eval report.

    On cancellation every run writes what finished (as `Runner.run` does), the report
    is written from it with `interrupted: true`, and the cancellation propagates.
    """
    plans = same_samples(plans)  # prepare_eval's already are; a caller's own may not be
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
