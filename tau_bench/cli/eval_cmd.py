"""`tau eval --config eval.yaml`: user models x tasks x k samples -> pass@k and pass^k.

Thin: read the eval file (flags override it), let `tau_bench.runner` prepare and run
one run per user model, print the table and say where the JSON report is.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from tau_bench.cli.errors import fail
from tau_bench.cli.run_progress import RichProgress


def eval(
    config: Annotated[
        Path, typer.Option("--config", help="YAML eval file (see docs/training.md).")
    ],
    user_models: Annotated[
        str | None, typer.Option("--user-models", help="m1,m2,...: overrides the file's.")
    ] = None,
    num_samples: Annotated[
        int | None,
        typer.Option("--num-samples", help="Samples (trials) per user model and task."),
    ] = None,
    max_steps: Annotated[
        int | None,
        typer.Option("--max-steps", help="Agent actions (tool calls + messages) per episode."),
    ] = None,
    max_concurrency: Annotated[
        int | None,
        typer.Option("--max-concurrency", help="Live episodes, shared by the user models."),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="Eval name (file names).")] = None,
    log_dir: Annotated[
        str | None, typer.Option("--log-dir", help="Runs go to <log-dir>/<name>/.")
    ] = None,
    output: Annotated[
        str | None,
        typer.Option("--output", help="Report JSON (default <log-dir>/<name>.eval.json)."),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue an interrupted eval of the same name.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bar.")] = False,
    backend: Annotated[
        str | None,
        typer.Option("--backend", help="Where episodes run: local or ray (docs/scale.md)."),
    ] = None,
    ray_address: Annotated[
        str | None, typer.Option("--ray-address", help="Ray cluster (implies --backend ray).")
    ] = None,
    workers: Annotated[
        int | None, typer.Option("--workers", min=1, help="Ray workers (> 1: a local Ray).")
    ] = None,
    llm_path: Annotated[
        str | None, typer.Option("--llm-path", help="Model calls: auto, litellm or direct.")
    ] = None,
) -> None:
    """Several user models x tasks x k samples: pass@k and pass^k."""
    from tau_bench.config import (
        RunConfigError,
        backend_conflict,
        eval_config_from_mapping,
        read_yaml_mapping,
    )

    overrides = {
        "user_models": user_models,
        "num_samples": num_samples,
        "max_steps": max_steps,
        "max_concurrency": max_concurrency,
        "name": name,
        "log_dir": log_dir,
        "output": output,
        "backend": backend,
        "ray_address": ray_address,
        "workers": workers,
        "llm_path": llm_path,
    }
    try:
        data = read_yaml_mapping(config)
        data = {str(k).replace("-", "_"): v for k, v in data.items()}
        data.update({k: v for k, v in overrides.items() if v is not None})
        problem = backend_conflict(
            data.get("backend"), data.get("workers"), data.get("ray_address")
        )
        if problem is not None:
            fail(problem)
        cfg = eval_config_from_mapping(data)
    except RunConfigError as exc:
        fail(str(exc))
    from tau_bench.output_files import same_file

    if same_file(cfg.output_path, config):
        fail(f"--output {cfg.output_path} is the eval's --config file: choose another output")
    _execute(cfg, resume=resume, quiet=quiet, again=_resume_command(config, overrides))


def _resume_command(config: Path, flags: dict[str, Any]) -> str:
    """The command that continues this eval: its `--config` and the flags given with it
    (`--name`, `--log-dir`, `--user-models`... decide which eval and which runs it is)."""
    words = ["tau", "eval", "--config", str(config)]
    for key, value in flags.items():
        if value is not None:
            words += [f"--{key.replace('_', '-')}", str(value)]
    return shlex.join([*words, "--resume"])


def _execute(cfg: Any, *, resume: bool, quiet: bool, again: str) -> None:
    """Run the eval; Ctrl-C, SIGTERM and a full disk end in one line with `again`, the
    command that continues it."""
    import asyncio

    from tau_bench import terminal
    from tau_bench.config import RunConfigError
    from tau_bench.data.paths import DataDirError
    from tau_bench.runner import prepare_eval
    from tau_bench.runner.core import TERMINATED, RunTerminated, RunWriteError
    from tau_bench.runner.evaluation import EvalRun
    from tau_bench.suites import UnknownDomainError, UnknownSplitError
    from tau_bench.tasks import TaskFileError

    try:
        plans = prepare_eval(cfg, resume=resume)
    except (
        RunConfigError,
        TaskFileError,
        UnknownDomainError,
        UnknownSplitError,
        DataDirError,
    ) as exc:
        fail(str(exc))
    err = terminal.console(stderr=True)
    progress = RichProgress(err, enabled=not quiet and err.is_terminal)
    total = sum(len(p.order) for p in plans.values())
    done = [
        r
        for p in plans.values()
        for k, r in p.existing.items()
        if k in set(p.order) and not r.is_error
    ]
    progress.started(total, done)
    observers = {model: _Forward(progress) for model in plans}
    evaluation = EvalRun(cfg, plans, observers, sigterm_stops=True)
    try:
        outcome = asyncio.run(evaluation.run())
    except RunConfigError as exc:
        progress.finished()
        fail(str(exc))
    except KeyboardInterrupt:
        progress.finished()
        _stopped(evaluation, "interrupted", 130, again)
    except RunTerminated:
        progress.finished()
        _stopped(evaluation, "terminated (SIGTERM)", TERMINATED, again)
    except RunWriteError:
        progress.finished()
        if evaluation.outcome is not None:
            _print_report(evaluation.outcome.report)
        fail(_write_failure(evaluation, again) or "cannot write the eval's files", 1)
    progress.finished()
    _print_report(outcome.report)
    print(f"report: {outcome.path}", file=err.file, flush=True)
    errors = outcome.report["overall"]["errors"]
    if errors:
        print(
            f"{errors} episode(s) failed with errors (not scored); re-run them with: {again}",
            file=err.file,
            flush=True,
        )
        if not outcome.report["overall"]["scored"]:
            raise SystemExit(1)


def _print_report(report: dict[str, Any]) -> None:
    """The report's table and the variance table, on stdout."""
    from tau_bench import terminal
    from tau_bench.analysis.variance import parts_from_dict, variance_table

    # Wide when piped, so the table's k columns are not squeezed into 80 characters.
    out = terminal.console(width=None if sys.stdout.isatty() else 200)
    out.print(render_eval(report))
    out.print(variance_table({report["name"]: parts_from_dict(report.get("variance"))}))


def _write_failure(evaluation: Any, again: str) -> str | None:
    """The `error:` line for a file of the eval that could not be written (a full disk),
    worded as `tau run`'s: what was kept and how to go on; None when every file was."""
    then = f"once it can be written (free some space), continue with: {again}"
    logs = evaluation.log_errors
    if logs:
        unsaved = sum(e.unsaved for e in logs)
        lost = (
            f", {unsaved} finished episode(s) could not be saved (they run again)"
            if unsaved
            else ""
        )
        return f"{logs[0]}; the eval was stopped{lost}; {then}"
    outputs = evaluation.output_errors
    if outputs:
        return (
            f"{outputs[0]}; the results logs in {evaluation.config.folder} hold every "
            f"finished episode (they are the source of truth); {then}"
        )
    return None


def _stopped(evaluation: Any, how: str, code: int, again: str) -> NoReturn:
    """Ctrl-C or SIGTERM: what was saved and the command that continues the eval."""
    from tau_bench.cli.errors import note

    problem = _write_failure(evaluation, again)
    if problem is not None:
        fail(problem, code)
    runners = list(evaluation.runners.values())
    if not any(r.plan.log_path.exists() for r in runners):
        note(f"{how} before the eval started: nothing was written")
        raise SystemExit(code)
    done = sum(_saved(r) for r in runners)
    total = sum(len(r.plan.order) for r in runners)
    outcome = evaluation.outcome
    report = f", the partial report in {outcome.path}" if outcome and outcome.outcomes else ""
    note(
        f"{how}: {done} of {total} episodes saved in {evaluation.config.folder}{report}; "
        f"continue with: {again}"
    )
    raise SystemExit(code)


def _saved(runner: Any) -> int:
    """Episodes of the run's plan in its log (those of an earlier session if it never
    started)."""
    if runner.outcome is not None:
        return len(runner.outcome.records)
    return sum(1 for key in runner.plan.order if key in runner.plan.existing)


class _Forward:
    """A run's observer that only forwards finished episodes to the shared progress bar."""

    def __init__(self, progress: RichProgress) -> None:
        self.progress = progress

    def started(self, total: int, done: list[Any]) -> None:
        return None

    def episode_done(self, record: Any) -> None:
        self.progress.episode_done(record)

    def finished(self) -> None:
        return None


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.4f}"


def render_eval(report: dict[str, Any]) -> Any:
    """The report as a rich table: a row per user model, the overall row, the spread."""
    from rich.table import Table

    ks = [str(k) for k in report["ks"]]
    spread = report["spread"]["pass_hat_1"]
    caption = (
        f"pass^1 across user models: min {_fmt(spread['min'])} ({spread['min_user_model']}), "
        f"max {_fmt(spread['max'])} ({spread['max_user_model']}), "
        f"stdev {_fmt(spread['stdev'])}"
    )
    table = Table(
        title=f"τ-bench eval {report['name']} ({report['num_samples']} samples per task)",
        caption=caption,
    )
    table.add_column("user model", style="bold")
    for column in ("tasks", "scored", "errors", "avg reward"):
        table.add_column(column, justify="right")
    for k in ks:
        table.add_column(f"pass@{k}", justify="right")
    for k in ks:
        table.add_column(f"pass^{k}", justify="right")

    def row(label: str, m: dict[str, Any], style: str | None = None) -> None:
        table.add_row(
            label,
            str(m["tasks"]),
            str(m["scored"]),
            str(m["errors"]),
            _fmt(m["avg_reward"]),
            *(_fmt(m["pass_at_k"][k]) for k in ks),
            *(_fmt(m["pass_hat_k"][k]) for k in ks),
            style=style,
        )

    for model, metrics in report["per_user_model"].items():
        row(model, metrics)
    row("overall", report["overall"], style="bold")
    return table
