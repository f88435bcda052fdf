"""`tau sdg generate|stats`: synthetic τ-bench / τ³-bench tasks, and their quality report
(for τ³ files also their validation: `tau sdg stats` exits 1 when a task fails it)."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any, NoReturn

import typer

app = typer.Typer(no_args_is_help=True)

DIFFICULTIES = ("easy", "medium", "hard")


@app.command("generate")
def generate(
    env: str = typer.Option(
        ..., "--env", help="Domain: airline, retail, tau3/airline or tau3/retail."
    ),
    difficulty: str = typer.Option(
        ..., "--difficulty", help="easy (1 action), medium (2-5) or hard (6-10); all actions count."
    ),
    num_samples: int = typer.Option(10, "--num-samples", min=1, help="Scenarios to attempt."),
    max_concurrency: int = typer.Option(4, "--max-concurrency", min=1, help="Samples at once."),
    output_file: Path = typer.Option(..., "--output-file", help="JSONL tasks file (appended)."),
    model: str = typer.Option(..., "--model", help="litellm model, e.g. openai/gpt-4o-mini."),
    seed: int = typer.Option(0, "--seed", help="Seeds user sampling (and the model, if it can)."),
    api_base: str | None = typer.Option(None, "--api-base", help="OpenAI-compatible server URL."),
    model_provider: str | None = typer.Option(None, "--model-provider", help="litellm provider."),
    temperature: float = typer.Option(0.8, "--temperature", help="Sampling temperature."),
    repair: bool = typer.Option(
        False, "--repair", help="Let the model fix a rejected sequence once."
    ),
    hint: str | None = typer.Option(
        None, "--scenario-hint", help="What your real traffic looks like (added to the prompt)."
    ),
    rejected_file: Path | None = typer.Option(
        None, "--rejected-file", help="Also write rejected samples (with reasons) to this JSONL."
    ),
    start_index: int | None = typer.Option(
        None,
        "--start-index",
        min=0,
        help="First sample index (default: after those already in the files).",
    ),
    no_json_mode: bool = typer.Option(
        False, "--no-json-mode", help="Do not send response_format=json_object."
    ),
    data_dir: Path | None = typer.Option(
        None, "--data-dir", help="Data directory (τ-bench; τ³'s for tau3/ envs)."
    ),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
) -> None:
    """Generate tasks: sample users, propose actions, validate in a sandbox, write instructions."""
    from tau_bench.cli.errors import fail

    if difficulty not in DIFFICULTIES:
        fail(f"unknown difficulty {difficulty!r} (available: {', '.join(DIFFICULTIES)})")
    if not math.isfinite(temperature) or temperature < 0:
        fail(f"--temperature must be a finite number, 0 or more, not {temperature}")
    from tau_bench.user_values import check_endpoint_url

    try:
        check_endpoint_url(api_base)
    except ValueError as exc:
        fail(f"--api-base: {exc}")
    _check_files(output_file, rejected_file)  # before the model stack is even imported

    from tau_bench import terminal
    from tau_bench.llm import LLMAuthError
    from tau_bench.output_files import shown_path
    from tau_bench.sdg.difficulty import Difficulty
    from tau_bench.sdg.pipeline import GenerateOptions
    from tau_bench.sdg.pipeline import generate as run_generation
    from tau_bench.sdg.targets import as_target

    domain = _domain(env, data_dir)
    unsupported = as_target(domain).supports_generation()
    if unsupported:
        fail(unsupported)
    options = GenerateOptions(
        env=env,
        difficulty=Difficulty(difficulty),
        num_samples=num_samples,
        output_file=output_file,
        model=model,
        max_concurrency=max_concurrency,
        seed=seed,
        api_base=api_base,
        provider=model_provider,
        temperature=temperature,
        repair=repair,
        data_dir=data_dir,
        hint=hint,
        rejected_file=rejected_file,
        json_mode=not no_json_mode,
        start_index=start_index,
    )
    from tau_bench.runner.core import TERMINATED, RunTerminated, SigtermCancels

    console = terminal.console()
    counts = {"ok": 0, "rejected": 0}
    generation = _generate_with_progress(run_generation, options, domain, quiet, console, counts)
    try:
        report = asyncio.run(SigtermCancels(True).terminating(generation))
    except KeyboardInterrupt:
        _stopped("interrupted", 130, counts, output_file)
    except RunTerminated:
        _stopped("terminated (SIGTERM)", TERMINATED, counts, output_file)
    except LLMAuthError as exc:
        fail(f"the model refused the credentials: {exc}")
    except OSError as exc:
        fail(f"cannot write {shown_path(exc.filename or output_file)}: {exc.strerror}")
    console.print(_report_table(report))
    _fail_if_the_model_never_answered(report)
    if report.written:
        console.print(
            f"Run them:     tau run --env {env} --tasks-file {output_file} --agent-strategy ...\n"
            f"Replay check: tau tasks verify --env {env} --tasks-file {output_file}\n"
            f"Quality:      tau sdg stats {output_file}",
            soft_wrap=True,
        )


def _fail_if_the_model_never_answered(report: Any) -> None:
    """Exit 1 when every sample failed on the model call (unreachable server, unknown model,
    bad request): the run wrote nothing, and a script must not take it for a success."""
    from tau_bench.cli.errors import fail
    from tau_bench.sdg.problems import LLM_ERROR

    if report.samples and report.rejected.get(LLM_ERROR, 0) == report.samples:
        fail(
            f"every sample ({report.samples}) failed on the model call ({LLM_ERROR}): "
            "check --model, --api-base and the provider (--rejected-file keeps the errors)",
            code=1,
        )


def _check_files(output_file: Path, rejected_file: Path | None) -> None:
    """One line, before any model call, for files the run would corrupt."""
    from tau_bench.cli.errors import fail
    from tau_bench.sdg.output import output_files_problem

    problem = output_files_problem(output_file, rejected_file, ("--output-file", "--rejected-file"))
    if problem:
        fail(problem)


def _domain(env: str, data_dir: Path | None) -> Any:
    """The domain, or a one-line error (unknown env, missing data)."""
    from tau_bench.cli.errors import fail
    from tau_bench.data.paths import DataDirError
    from tau_bench.suites import UnknownDomainError, load_domain

    try:
        return load_domain(env, data_dir)
    except (UnknownDomainError, DataDirError) as exc:
        fail(str(exc))


def _stopped(how: str, code: int, counts: dict[str, int], output_file: Path) -> NoReturn:
    """Ctrl-C or SIGTERM: what was written (every line whole, the runs line included) and
    how to go on."""
    from tau_bench.cli.errors import note
    from tau_bench.output_files import shown_path

    note(
        f"{how}: {counts['ok']} task(s) written to {shown_path(output_file)}, {counts['rejected']} "
        "sample(s) rejected; the same command again adds new samples after them (those in "
        "flight when it stopped are not retried)"
    )
    raise SystemExit(code)


async def _generate_with_progress(
    run_generation: Any,
    options: Any,
    domain: Any,
    quiet: bool,
    console: Any,
    counts: dict[str, int],
) -> Any:
    """The generation, `counts` kept as samples finish (what a stop reports), with a
    progress bar unless `quiet`."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if quiet:

        def count(outcome: Any) -> None:
            counts["ok" if outcome.ok else "rejected"] += 1

        return await run_generation(options, domain=domain, on_outcome=count)
    with Progress(
        TextColumn("sdg {task.fields[env]}/{task.fields[difficulty]}", style="bold", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("written {task.fields[ok]} rejected {task.fields[rejected]}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        bar = progress.add_task(
            "sdg",
            total=options.num_samples,
            env=options.env,
            difficulty=options.difficulty.value,
            ok=0,
            rejected=0,
        )

        def on_outcome(outcome: Any) -> None:
            counts["ok" if outcome.ok else "rejected"] += 1
            progress.update(bar, advance=1, ok=counts["ok"], rejected=counts["rejected"])

        return await run_generation(options, domain=domain, on_outcome=on_outcome)


def _report_table(report: Any) -> Any:
    from rich.table import Table

    table = Table(title=f"tau sdg generate: {report.env} / {report.difficulty} ({report.model})")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("scenarios generated (samples)", str(report.samples))
    table.add_row("scenarios validated", f"{report.validated} ({report.validation_rate:.0%})")
    table.add_row("tasks written", str(report.written))
    for reason, count in report.rejected.most_common():
        table.add_row(f"rejected: {reason}", str(count))
    table.add_row("validated after repair", str(report.repaired))
    usage = report.usage
    table.add_row("model calls", str(usage.calls))
    table.add_row(
        "tokens (prompt / completion)", f"{usage.prompt_tokens} / {usage.completion_tokens}"
    )
    table.add_row("cost", f"${usage.cost:.4f}")
    table.add_row("elapsed", f"{report.elapsed:.1f} s")
    table.add_row("scenarios / minute", f"{report.per_minute(report.validated):.1f}")
    return table


@app.command("stats")
def stats(
    tasks_file: Path = typer.Argument(
        ..., help="A tasks file: `tau sdg generate`'s, or any of the suite's (τ³: tasks.json)."
    ),
    env: str | None = typer.Option(
        None, "--env", help="Domain, e.g. retail or tau3/telecom (default: from the provenance)."
    ),
    similarity: float = typer.Option(
        0.9,
        "--similarity",
        min=0.0,
        max=1.0,
        help="Jaccard threshold for near-identical instructions.",
    ),
    no_verify: bool = typer.Option(False, "--no-verify", help="Skip replaying every task."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    data_dir: Path | None = typer.Option(
        None, "--data-dir", help="Data directory (τ-bench; τ³'s for tau3/ envs)."
    ),
) -> None:
    """Quality report: difficulty consistency, action mix, duplicates, validation rate; on
    τ³ files also the validation of every task (exit 1 if one fails)."""
    from tau_bench import terminal
    from tau_bench.cli.errors import fail
    from tau_bench.sdg.stats import compute_stats, file_hint, load_runs
    from tau_bench.tasks import TaskFileError, load_tasks

    hint = file_hint(tasks_file)
    if env and hint.env and hint.env != env:
        fail(f"{tasks_file} holds tasks generated for {hint.env}, not {env}")
    name = env or hint.env
    if name is None and hint.tau3_shaped:
        fail(f"{tasks_file} holds τ³ tasks: name their domain with --env tau3/<domain>")
    domain = _domain(name, data_dir) if name else None
    if domain is not None and domain.suite != "tau3" and hint.tau3_shaped:
        fail(f"{tasks_file} holds τ³ tasks, not {name}'s: use --env tau3/{name}")
    try:
        tasks = domain.load_tasks_file(tasks_file) if domain is not None else load_tasks(tasks_file)
    except TaskFileError as exc:
        fail(str(exc))
    if not tasks:
        fail(f"{tasks_file} holds no tasks")
    report = compute_stats(
        tasks, load_runs(tasks_file), domain=domain, similarity=similarity, verify=not no_verify
    )
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        terminal.console().print(*_stats_tables(report, str(tasks_file)))
    ver = report["verification"]
    if report["suite"] == "tau3" and ver is not None and ver["failed"]:
        raise SystemExit(1)


def _stats_tables(report: dict[str, Any], source: str) -> list[Any]:
    from rich.table import Table

    from tau_bench.terminal import styled

    diff = report["difficulty"]
    rate = diff["consistency_rate"]
    t1 = Table(
        title=f"{source}: {report['tasks']} tasks - difficulty consistency "
        + ("n/a" if rate is None else f"{rate:.0%}")
    )
    for col in ("declared", "tasks", "consistent", "actions min", "mean", "max"):
        t1.add_column(col, justify="left" if col == "declared" else "right")
    for key, row in diff["by_difficulty"].items():
        t1.add_row(
            key,
            str(row["tasks"]),
            str(row["consistent"]),
            str(row["min"]),
            f"{row['mean']:.1f}",
            str(row["max"]),
        )

    mix = report["action_mix"]
    t2 = Table(title=f"action mix: {mix['actions']} actions, {mix['mean_actions']:.1f} per task")
    t2.add_column("tool")
    t2.add_column("count", justify="right")
    t2.add_column("share", justify="right")
    for tool, count in mix["by_tool"].items():
        t2.add_row(tool, str(count), f"{count / mix['actions']:.0%}" if mix["actions"] else "-")
    if "writes" in mix:
        t2.add_row(
            styled("writes / reads", "bold"),
            f"{mix['writes']} / {mix['reads']}",
            f"{mix['write_share']:.0%} writes",
        )
    t2.add_row("tasks with outputs", str(mix["tasks_with_outputs"]), "")

    dup = report["duplicates"]
    t3 = Table(title="quality")
    t3.add_column("measure")
    t3.add_column("value", justify="right")
    t3.add_row("identical action sequences (groups)", str(len(dup["identical_actions"])))
    at_least = "" if dup["near_identical_complete"] else "at least "
    t3.add_row(
        f"near-identical instruction pairs (Jaccard >= {dup['similarity_threshold']})",
        f"{at_least}{dup['near_identical_pairs']}",
    )
    t3.add_row("tasks that duplicate another", f"{at_least}{dup['duplicate_tasks']}")
    if not dup["near_identical_complete"]:
        t3.add_row("  (near-duplicate search stopped at its work limit)", "")
    val = report["validation"]
    if val is None:
        t3.add_row("validation rate", "n/a (no .runs.jsonl)")
    else:
        t3.add_row(
            "validation rate",
            f"{val['rate']:.0%} ({val['validated']}/{val['samples']} in {val['runs']} runs)",
        )
        if val["malformed_runs"]:
            t3.add_row("  runs lines left out (malformed)", str(val["malformed_runs"]))
        for reason, count in val["rejected"].items():
            t3.add_row(f"  rejected: {reason}", str(count))
        t3.add_row("tasks validated after repair", str(val["repaired_tasks"]))
        t3.add_row("generation cost", f"${val['cost']:.4f}")
    ver = report["verification"]
    if ver is not None and "problems" not in ver:
        t3.add_row("replay scores 1.0 now", f"{ver['passed']}/{ver['checked']}")
    if ver is None or "problems" not in ver:
        return [t1, t2, t3]
    t3.add_row(
        f"valid: replay 1.0 ({ver['judge']}), no tool error, DB changes",
        f"{ver['passed']}/{ver['checked']}",
    )
    for reason, count in ver["by_reason"].items():
        t3.add_row(f"  failing: {reason}", str(count))
    if ver["known_issues"]:
        t3.add_row("fail in the original too (known issues)", str(len(ver["known_issues"])))
    return [t1, t2, t3, *_failure_tables(ver, report["env"])]


def _failure_tables(ver: dict[str, Any], env: str) -> list[Any]:
    """τ³ validation: the failing tasks (first 20) and a one-line verdict."""
    from rich.table import Table
    from rich.text import Text

    from tau_bench.terminal import styled

    out: list[Any] = []
    if ver["problems"]:
        table = Table(title="tasks that fail validation")
        for col in ("task", "id", "problems"):
            table.add_column(col, justify="right" if col == "task" else "left")
        for index, entry in list(ver["problems"].items())[:20]:
            table.add_row(index, entry["id"], "\n".join(entry["problems"]))
        out.append(table)
    failed = len(ver["failed"])
    verdict = styled("OK", "green") if not failed else styled(f"{failed} FAILED", "red")
    out.append(Text.assemble(f"{env}: {ver['passed']}/{ver['checked']} tasks valid ", verdict))
    return out
