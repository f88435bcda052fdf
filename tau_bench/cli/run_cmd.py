"""`tau run` (and `python run.py`): run agents on tasks, write results, show a summary.

Thin: the flags are in `run_flags`, their layering in `run_layers`, what is shown in
`run_progress`; this module turns a RunConfig into a run and reports how it went.
"""

from __future__ import annotations

from typing import Any, NoReturn

import typer

from tau_bench.cli.errors import fail, note
from tau_bench.cli.run_flags import _flags, with_underscore_aliases
from tau_bench.cli.run_layers import config_from_context
from tau_bench.cli.run_progress import error_examples, make_progress, render_summary
from tau_bench.config import RunConfig


def run(ctx: typer.Context, **params: Any) -> None:
    """Run agents on τ-bench tasks and write tau-bench results, a JSONL log and a summary."""
    from tau_bench.config import RunConfigError

    try:
        cfg, asked = config_from_context(ctx)
    except RunConfigError as exc:
        fail(str(exc))
    _execute(cfg, asked)


run.__signature__ = with_underscore_aliases(_flags)  # type: ignore[attr-defined]

CONTEXT_SETTINGS = {"allow_interspersed_args": True, "ignore_unknown_options": True}


def _resume_command(plan: Any) -> str:
    """The command that finishes this run (trials beyond the first need saying)."""
    trials = plan.config.num_trials
    return f"tau run --resume {plan.log_path}" + (f" --num-trials {trials}" if trials > 1 else "")


def _write_failure(runner: Any) -> str | None:
    """The `error:` line for a file of the run that could not be written (a full disk),
    saying what was kept and how to go on; None when every file was written."""
    plan = runner.plan
    then = f"once it can be written (free some space), continue with: {_resume_command(plan)}"
    log_error = runner.log_error
    if log_error is not None:
        lost = (
            f", {log_error.unsaved} finished episode(s) could not be saved (they run again)"
            if log_error.unsaved
            else ""
        )
        return f"{log_error}; the run was stopped{lost}; {then}"
    if runner.output_error is not None:
        return (
            f"{runner.output_error}; the results log {plan.log_path} holds every finished "
            f"episode (it is the source of truth); {then}"
        )
    return None


def _stopped(runner: Any, how: str, code: int) -> NoReturn:
    """Ctrl-C or SIGTERM: what was saved and the command that continues the run."""
    plan = runner.plan
    problem = _write_failure(runner)
    if problem is not None:
        fail(problem, code)
    if not plan.log_path.exists():
        note(f"{how} before the run started: nothing was written")
        raise SystemExit(code)
    done = runner.outcome.summary["episodes_done"] if runner.outcome else 0
    note(
        f"{how}: {done} of {len(plan.order)} episodes saved in {plan.log_path}; "
        f"continue with: {_resume_command(plan)}"
    )
    raise SystemExit(code)


def plan_notes(cfg: RunConfig, plan: Any, asked: frozenset[str]) -> list[str]:
    """What the run does other than `asked` says: a resumed run keeps its name, folder and
    trials; a run name already taken is written under the next free one."""
    from pathlib import Path

    notes = []
    where = plan.log_path.parent
    if plan.resumed:
        if "run_name" in asked and cfg.run_name != plan.run_name:
            notes.append(
                f"note: run name {cfg.run_name} is not used when resuming: the run keeps "
                f"its name {plan.run_name}"
            )
        if "log_dir" in asked and Path(cfg.log_dir).resolve() != where.resolve():
            notes.append(
                f"note: log dir {cfg.log_dir} is not used when resuming: the run's files "
                f"stay beside its log, in {where}"
            )
        if "num_trials" in asked and plan.config.num_trials > cfg.num_trials:
            notes.append(
                f"note: the log holds {plan.config.num_trials} trials and all are kept "
                f"(num trials {cfg.num_trials} removes none)"
            )
    elif cfg.run_name and plan.run_name != cfg.run_name:
        notes.append(
            f"note: run name {cfg.run_name} is taken in {where}: this run is written as "
            f"{plan.run_name}"
        )
    return notes


def _execute(cfg: RunConfig, asked: frozenset[str] = frozenset()) -> None:
    import asyncio

    from tau_bench import terminal
    from tau_bench.config import RunConfigError
    from tau_bench.data.paths import DataDirError
    from tau_bench.runner import Runner, prepare_run
    from tau_bench.runner.core import TERMINATED, RunTerminated, RunWriteError
    from tau_bench.suites import UnknownDomainError, UnknownSplitError
    from tau_bench.tasks import TaskFileError

    try:
        plan = prepare_run(cfg)
    except (
        RunConfigError,
        TaskFileError,
        UnknownDomainError,
        UnknownSplitError,
        DataDirError,
    ) as exc:
        fail(str(exc))
    err = terminal.console(stderr=True)
    observer = make_progress(err, quiet=cfg.quiet)
    runner = Runner(plan, observer, sigterm_stops=True)
    for line in plan_notes(cfg, plan, asked):
        note(line)
    if plan.resumed:
        note(
            f"resuming {plan.log_path}: {len(plan.order) - len(plan.pending)} of "
            f"{len(plan.order)} episodes done, {len(plan.pending)} to run"
        )
    try:
        outcome = asyncio.run(runner.run())
    except RunConfigError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        _stopped(runner, "interrupted", 130)
    except RunTerminated:
        _stopped(runner, "terminated (SIGTERM)", TERMINATED)
    except RunWriteError:
        if runner.outcome is not None:
            terminal.console().print(render_summary(runner.outcome.summary))
        fail(_write_failure(runner) or "cannot write the run's files", 1)
    terminal.console().print(render_summary(outcome.summary))
    summary = outcome.summary
    for line in summary.get("worker_errors", []):
        note(f"error: {line}")
    if summary.get("agent_close_error"):
        note(f"warning: {summary['agent_close_error']} (the results are complete)")
    if summary.get("stopped_early"):
        note(
            f"stopped early: {summary['stopped_early']}; no new episodes were started. "
            f"Fix the cause, then continue with: {_resume_command(plan)}"
        )
        raise SystemExit(1)
    if summary["errors"]:
        note(
            f"{summary['errors']} episode(s) failed with errors (not scored); "
            f"re-run them with: {_resume_command(plan)}"
        )
        for line in error_examples(outcome.records):
            note(line)
        if not summary["episodes_scored"]:
            raise SystemExit(1)  # nothing could be scored: let scripts notice
    if summary.get("worker_errors"):
        note(f"re-run the missing episodes with: {_resume_command(plan)}")
        raise SystemExit(1)


def standalone_app() -> typer.Typer:
    """The `run` command as a program of its own (`python run.py ...`)."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command(
        name="run",
        help="Run agents on τ-bench tasks (the τ-bench run.py flags).",
        context_settings=CONTEXT_SETTINGS,
    )(run)
    return app


def main() -> int:
    """`python run.py ...`: exactly `tau run ...` (same flags, messages, exit codes)."""
    from tau_bench.cli.errors import run_cli

    return run_cli(standalone_app())
