"""`tau rescore`, `tau analyze`, `tau export`: one run's results in, a new file out.

Thin, like `compare_cmd` (whose results loading they share): load, call
`tau_bench.analysis`, print. User errors print one line and exit 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from tau_adapters.registry import one_line
from tau_bench.cli.compare_checks import check_not_input
from tau_bench.cli.compare_cmd import (
    Results,
    load_results,
    note,
    stdout_console,
    unreadable_note,
    writing_stdout,
)
from tau_bench.cli.errors import fail
from tau_bench.output_files import shown_path


def rescore(
    results: Annotated[
        Path, typer.Argument(help="One results file (.jsonl log or τ-bench .json).")
    ],
    env: Annotated[
        str | None,
        typer.Option(
            "--env",
            help="Domain(s) to replay on: airline, retail or both (default: the file's).",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Write the rescored results (same format) here."),
    ] = None,
    data_dir: Annotated[
        str | None, typer.Option("--data-dir", help="Benchmark data directory.")
    ] = None,
    task_split: Annotated[
        str | None,
        typer.Option(
            "--task-split", help="Split the task ids refer to (default: the run's, else test)."
        ),
    ] = None,
    recorded_tasks: Annotated[
        bool,
        typer.Option("--recorded-tasks", help="Score against the task stored in each record."),
    ] = False,
    score_unfinished: Annotated[
        bool,
        typer.Option(
            "--score-unfinished",
            help="Also score original τ-bench episodes that never finished (they got 0).",
        ),
    ] = False,
    judge_model: Annotated[
        str | None,
        typer.Option(
            "--judge-model", help="τ³ NL-assertion judge: a model, or assume-met (offline)."
        ),
    ] = None,
) -> None:
    """Replay recorded trajectories on today's domain and recompute their rewards."""
    from tau_bench.cli.output_paths import check_output

    if output is not None:
        check_output(output)  # before the replay (and a τ³ judge's calls)
        # never over the run's own files (a τ² file's too, before its judge's calls)
        check_not_input(_written(output), [(results.stem, results)])
    if env is not None and env.strip().startswith("tau3/"):  # a τ² results file
        from tau_bench.cli.tau2_cmd import rescore_tau2

        rescore_tau2(results, env.strip(), judge_model, output, data_dir)
        return
    if judge_model is not None:
        fail("--judge-model applies to τ³ rescoring only (--env tau3/<domain>)")
    from tau_bench.analysis.loading import ResultsLoadError, load_run
    from tau_bench.analysis.rescore import RescoreError, rescore_run, write_rescored
    from tau_bench.domains import Domain as V1Domain
    from tau_bench.suites import load_domain

    if results.is_dir():
        fail(f"rescore takes one results file, not a folder: {results}")
    try:
        run = load_run(results)
    except ResultsLoadError as exc:
        fail(one_line(str(exc)))  # a newline in a file name: still one line
    unreadable_note(run)
    names = [e.strip() for e in env.split(",") if e.strip()] if env else run.domains
    if not names:
        fail(f"{results} does not say its domain: pass --env airline or --env retail")
    # unknown env / data dir: run_cli reports them
    loaded = {name: load_domain(name, data_dir) for name in names}
    # This results format is τ-bench v1's; its domains are the v1 suite's.
    domains = {n: d for n, d in loaded.items() if isinstance(d, V1Domain)}
    if len(domains) != len(loaded):
        if env is None:  # the run's own domains: a τ³ run log
            fail(
                f"{results} is a τ³ run: export it first with `tau export {results} "
                "--format tau2 -o DIR`, then `tau rescore DIR/<run>.<domain>.json "
                "--env tau3/<domain>`"
            )
        fail("this results file is in τ-bench v1's format: rescore it with a v1 --env")
    try:
        outcome = rescore_run(
            run,
            domains,
            split=task_split,
            recorded_tasks=recorded_tasks,
            score_unfinished=score_unfinished,
        )
    except RescoreError as exc:
        fail(str(exc))
    with writing_stdout():
        _print_rescore(outcome)
    if output is not None:
        try:
            write_rescored(outcome, output)
        except OSError as exc:  # a full disk, a file size limit: no .tmp is left
            fail(f"cannot write {shown_path(output)}: {exc.strerror or exc}")
        note(f"wrote {output}")


def _written(out: Path, flag: str = "-o") -> dict[str, list[Path]]:
    """What writing `out` writes (it and the temporary `<out>.tmp` renamed over it), as
    `check_not_input` takes it."""
    return {f"{flag} {out}": [out, out.with_name(out.name + ".tmp")]}


def _print_rescore(outcome: Any) -> None:
    from rich.table import Table

    from tau_bench.analysis.tables import fmt

    summary = outcome.summary()
    console = stdout_console()
    if outcome.changed:
        table = Table(title="Rewards that changed")
        for name in ("task", "trial", "before", "after", "why", "notes"):
            table.add_column(name, justify="right" if name in ("task", "trial") else "left")
        for e in outcome.changed:
            table.add_row(
                str(e.task_id),
                str(e.trial),
                fmt(e.old_reward, "g"),
                fmt(e.new_reward, "g"),
                e.why(),
                "; ".join(e.notes),
            )
        console.print(table)
    avg = summary["avg_reward"]
    console.print(
        f"{summary['rescored']} of {summary['episodes']} episodes rescored on "
        f"{summary['env']} {summary['task_split']}: {summary['changed']} changed "
        f"({summary['now_passing']} now pass, {summary['now_failing']} now fail); "
        f"average reward {fmt(avg['before'])} -> {fmt(avg['after'])}"
    )
    skipped: dict[str, int] = {}
    for e in outcome.episodes:
        if e.skipped:
            skipped[e.skipped] = skipped.get(e.skipped, 0) + 1
    for reason, n in skipped.items():
        console.print(f"skipped {n}: {reason}")
    changed_tasks = {n for e in outcome.episodes for n in e.notes if "changed since" in n}
    if changed_tasks:
        console.print("task data differs from the recording: " + "; ".join(sorted(changed_tasks)))
    if summary["multi_call_messages"]:
        console.print(
            f"{summary['multi_call_messages']} assistant message(s) carried several tool calls: "
            "all were executed in order (the original executed only the first)"
        )
    if summary["observation_changes"]:
        console.print(
            f"{summary['observation_changes']} tool observation(s) differ from the recorded "
            "ones (tools or data changed since the run)"
        )


def analyze(
    results: Results,
    model: Annotated[str, typer.Option("--model", help="Judge model (any litellm model).")],
    model_provider: Annotated[
        str | None, typer.Option("--model-provider", help="litellm provider of --model.")
    ] = None,
    api_base: Annotated[
        str | None, typer.Option("--api-base", help="OpenAI-compatible server for the judge.")
    ] = None,
    temperature: Annotated[float, typer.Option("--temperature")] = 0.0,
    max_num_failed_results: Annotated[
        int | None,
        typer.Option("--max-num-failed-results", "-n", help="At most N failed episodes per run."),
    ] = None,
    max_concurrency: Annotated[
        int, typer.Option("--max-concurrency", help="Judge calls at once.")
    ] = 1,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="JSON output (default: analysis-<run>.json)."),
    ] = None,
) -> None:
    """Classify failed episodes with an LLM: whose fault (user, agent, environment), what kind."""
    import asyncio
    import math

    from tau_bench.analysis.analyze import Analysis, analyze_runs
    from tau_bench.analysis.mt_bench import safe_name
    from tau_bench.cli.output_paths import check_output
    from tau_bench.llm import LLMConfig

    if not math.isfinite(temperature) or not 0 <= temperature <= MAX_TEMPERATURE:
        fail(f"--temperature must be a number from 0 to {MAX_TEMPERATURE:g}, not {temperature}")
    if max_concurrency < 1:
        fail("--max-concurrency must be at least 1")
    if max_num_failed_results is not None and max_num_failed_results < 0:
        fail("--max-num-failed-results must not be negative")
    runs = load_results(results)
    # The run's name comes from the results file: made safe (no folders) and short.
    out = output or Path(f"analysis-{safe_name(runs[0].label)}.json")
    check_output(out, flag="-o" if output else "output")  # before any paid judge call
    check_not_input(_written(out, "-o" if output else "output"), runs)
    config = LLMConfig(
        model=model, provider=model_provider, api_base=api_base, temperature=temperature
    )
    analysis = Analysis(model=model, results=[], failed={})
    try:
        asyncio.run(
            analyze_runs(
                runs,
                config,
                max_failed=max_num_failed_results,
                max_concurrency=max_concurrency,
                into=analysis,
            )
        )
    except KeyboardInterrupt:
        analysis.interrupted = True
        if not analysis.results:
            note("interrupted before any judge result: nothing written")
        else:
            _write_analysis(out, analysis)
            note(
                f"interrupted: wrote the {len(analysis.results)} finished result(s) to {out}; "
                "unfinished episodes are not in it"
            )
        raise SystemExit(130) from None
    _write_analysis(out, analysis)
    with writing_stdout():
        _print_analysis(analysis)
    note(f"wrote {out}")
    _fail_if_none_classified(analysis)


def _fail_if_none_classified(analysis: Any) -> None:
    """Exit 2 with the first judge error when episodes were sent to the judge and not
    one came back classified (a model that does not exist, a missing key): the file is
    written, but nothing in it is an analysis."""
    results = analysis.results
    if not results or any(r.status == "classified" for r in results):
        return
    first = next((r.error for r in results if r.error), "no reason given")
    fail(
        f"no episode classified: all {len(results)} judge call(s) with {analysis.model} "
        f"failed; the first: {first}"
    )


MAX_TEMPERATURE = 2.0
"""The highest sampling temperature providers accept (OpenAI's range is 0 to 2)."""


def _write_analysis(out: Path, analysis: Any) -> None:
    from tau_bench.results import write_json_atomic

    try:
        write_json_atomic(out, analysis.to_dict())
    except OSError as exc:
        fail(f"cannot write {shown_path(out)}: {exc.strerror or exc}")


def _print_analysis(analysis: Any) -> None:
    from rich.table import Table

    summary = analysis.summary()
    console = stdout_console()
    failed = sum(analysis.failed.values())
    classified = summary["classified"]
    console.print(
        f"{summary['analyzed']} of {failed} failed episode(s) analyzed with {analysis.model}: "
        f"{classified} classified, {summary['unclassified']} unclassified "
        f"(cost ${summary['cost']:.4f})"
    )
    for title, counts in (
        ("Fault author", summary["fault_author"]),
        ("Fault type (all)", summary["fault_type"]),
        ("Fault type (agent faults)", summary["fault_type_of_agent_faults"]),
    ):
        if not counts:
            continue
        total = sum(counts.values())
        table = Table(title=title)
        table.add_column("")
        table.add_column("episodes", justify="right")
        table.add_column("share", justify="right")
        for key, n in sorted(counts.items(), key=lambda kv: -kv[1]):
            table.add_row(str(key), str(n), f"{n / total:.0%}")
        console.print(table)


def export(
    results: Results,
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Folder to write into (MT-bench: ./data).")
    ] = Path("data"),
    format: Annotated[
        str, typer.Option("--format", help="Export format: mt-bench or tau2.")
    ] = "mt-bench",
    dataset: Annotated[
        str | None, typer.Option("--dataset", help="Dataset name (default: the run's domain).")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Model name in file names (default: the run's).")
    ] = None,
) -> None:
    """Export results in another format (mt-bench: per-task chat JSONL and a scores file;
    tau2: a τ³ run as tau2-bench's results file)."""
    from tau_bench.analysis.mt_bench import write_mt_bench
    from tau_bench.cli.output_paths import check_output

    if format not in ("mt-bench", "tau2"):
        fail(f"unknown export format {format!r} (available: mt-bench, tau2)")
    runs = load_results(results)
    # an empty run (a header alone) would be an export of empty files, read downstream
    # as a run that scored nothing: refused before anything is written, as compare does
    for run in runs:
        if not run.records:
            fail(f"{run.label}: no episodes to export")
    if format == "tau2":  # τ³ runs as τ² results files (tau2 view / evaluate-trajs)
        from tau_bench.cli.tau2_cmd import export_tau2

        export_tau2(runs, output, None)
        return
    check_output(output, folder=True)
    for run in runs:
        try:
            folder = write_mt_bench(
                run.records,
                output,
                dataset=dataset or run.env or "tau-bench",
                model=model or run.model or run.agent,
            )
        except OSError as exc:  # the half-written folder is already removed
            fail(
                f"{run.label}: cannot write the export in {shown_path(output)}: {exc.strerror or exc}"
            )
        note(f"{run.label}: wrote {folder}")
