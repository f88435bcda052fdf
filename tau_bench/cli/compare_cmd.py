"""`tau compare` and `tau report`, and the results loading every results command shares.

Thin: load results files, call `tau_bench.analysis`, print. User errors (unreadable
files, runs on different tasks, a missing optional library, an output that cannot be
written or is one of the inputs) print one line and exit 2.
`tau rescore`, `tau analyze` and `tau export` (one run in, a new file out) are in
`results_cmd`.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tau_adapters.registry import one_line
from tau_bench.cli.errors import fail
from tau_bench.output_files import shown_path

if TYPE_CHECKING:
    from tau_bench.analysis.compare import Comparison
    from tau_bench.analysis.loading import Run

RESULTS_HELP = "Results files (a run's .jsonl log or τ-bench .json) or folders of them."


def note(message: str) -> None:
    """A status line on stderr: one line (a newline in a file name is shown `\\n`)."""
    print(one_line(message), file=sys.stderr, flush=True)


def escape_unencodable() -> None:
    """Print what stdout's encoding cannot hold (a lone surrogate from a results file,
    `"\\ud800"`) as its escape (`\\ud800`) instead of ending the command."""
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")


def stdout_console() -> Any:
    """stdout; wide when not a terminal, so piped tables are not squeezed to 80 columns.
    What its encoding cannot hold is printed escaped (`escape_unencodable`)."""
    from tau_bench import terminal

    escape_unencodable()
    return terminal.console() if sys.stdout.isatty() else terminal.console(width=200)


_WRITE_ERRORS = {errno.ENOSPC, errno.EPIPE, errno.EFBIG, errno.EDQUOT, errno.EIO}
"""What a write to a full device, a closed pipe or past a size limit raises. Every file
these commands write themselves turns its own OSError into an `error:` line where it is
written; one of these reaching `writing_stdout` is stdout's."""


@contextmanager
def writing_stdout() -> Iterator[None]:
    """Around a command that prints its results: stdout that cannot take them (`>
    /dev/full`, a full disk, a closed pipe) is one `error:` line and exit 2, not a
    traceback. Any other OSError goes on as it was."""
    try:
        yield
        sys.stdout.flush()
    except OSError as exc:
        if exc.errno not in _WRITE_ERRORS:
            raise
        # Python flushes stdout again at exit: point it at /dev/null so it stays quiet.
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        fail(f"cannot write the output to stdout: {exc.strerror or exc}")


def unreadable_note(run: Run) -> None:
    """Say on stderr that lines of the run's log were unreadable and left out (every
    command reading results says it: its numbers are without them)."""
    if run.unreadable_note:
        note(run.unreadable_note)


def load_results(paths: list[Path], tasks: str | None = None) -> list[Run]:
    """The runs, with only the episodes of `tasks` (ids and ranges: "0-4 7") when given."""
    from dataclasses import replace

    from tau_bench.analysis.loading import ResultsLoadError, load_runs
    from tau_bench.task_ids import expand_task_ids

    try:
        loaded = load_runs(list(paths))
    except ResultsLoadError as exc:
        fail(one_line(str(exc)))  # a newline in a file name: still one line
    for reason in loaded.skipped:
        note(f"skipped: {reason}")
    for run in loaded.runs:
        unreadable_note(run)
    if tasks is None:
        return loaded.runs
    try:
        wanted = set(expand_task_ids(tasks))
    except ValueError as exc:
        fail(f"--tasks: {exc}")
    runs = [replace(r, records=[e for e in r.records if e.task_id in wanted]) for r in loaded.runs]
    empty = [r.label for r in runs if not r.records]
    if empty:
        fail(f"--tasks {tasks!r} selects no episode of {', '.join(empty)}")
    return runs


def _compare(
    results: list[Path],
    *,
    intersect: bool,
    baseline: str | None,
    seed: int,
    resamples: int,
    confidence: float,
    by_user_model: bool,
    allow_mismatch: bool = False,
    tasks: str | None = None,
    outputs: Mapping[str, Sequence[Path]] | None = None,
    gate: bool = False,
) -> Comparison:
    """The comparison; its `runs` are the runs as compared (one per row). `outputs` (by
    flag) that are one of the runs' files are refused once the runs are found, unlike
    runs next (exit 3; `tau_bench.cli.compare_checks`)."""
    from tau_bench.analysis.bootstrap import MAX_RESAMPLES
    from tau_bench.analysis.compare import ComparisonError, UnknownBaseline, compare_runs
    from tau_bench.cli.compare_checks import check_confounds, check_not_input

    if not 1 <= resamples <= MAX_RESAMPLES:
        fail(f"--bootstrap must be from 1 to {MAX_RESAMPLES:,} (resamples are kept in memory)")
    if not 0 < confidence < 1:
        fail("--confidence must be between 0 and 1 (e.g. 0.95)")
    runs = load_results(results, tasks)
    if gate and len(runs) != 2:  # before any table is printed
        from tau_bench.analysis.gate import TWO_RUNS

        fail(f"{TWO_RUNS} (got {len(runs)})")
    check_not_input(outputs or {}, runs)
    confounds = check_confounds(
        runs, intersect=intersect, allow_mismatch=allow_mismatch, console=stdout_console()
    )
    try:
        comparison = compare_runs(
            runs,
            # --allow-mismatch on different task sets compares on the shared tasks
            intersect=intersect or bool(confounds.get("warning")),
            baseline=0 if baseline is None else baseline,
            resamples=resamples,
            confidence=confidence,
            seed=seed,
            by_user_model=by_user_model,
        )
    except UnknownBaseline as exc:
        fail(f"--{exc}")
    except ComparisonError as exc:
        fail(str(exc))
    comparison.confounds = confounds
    return comparison


Results = Annotated[list[Path], typer.Argument(help=RESULTS_HELP, show_default=False)]
Intersect = Annotated[
    bool,
    typer.Option("--intersect", help="Compare on the tasks every run has (else refuse)."),
]
Baseline = Annotated[
    str | None,
    typer.Option("--baseline", help="Run the others are paired against: # or label."),
]
Seed = Annotated[int, typer.Option("--seed", help="Bootstrap seed.")]
Resamples = Annotated[int, typer.Option("--bootstrap", help="Bootstrap resamples (1 to 100,000).")]
Confidence = Annotated[float, typer.Option("--confidence", help="Confidence level.")]
AllowMismatch = Annotated[
    bool,
    typer.Option(
        "--allow-mismatch",
        help="Compare runs that differ in more than the agent (task set or definitions, "
        "suite version, user simulator, judge); every output then says so first.",
    ),
]
Tasks = Annotated[
    str | None,
    typer.Option("--tasks", help='Only these tasks: ids and ranges, e.g. "0-4 7 retail/9-12".'),
]
ByUserModel = Annotated[
    bool,
    typer.Option(
        "--by-user-model",
        help="Split runs by user model: each (run, user model) of a rotation is a row.",
    ),
]


def compare(
    results: Results,
    intersect: Intersect = False,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the comparison as JSON here.")
    ] = None,
    baseline: Baseline = None,
    seed: Seed = 0,
    resamples: Resamples = 10_000,
    confidence: Confidence = 0.95,
    matrix: Annotated[
        bool, typer.Option("--matrix/--no-matrix", help="Print the per-task matrix.")
    ] = True,
    by_user_model: ByUserModel = False,
    allow_mismatch: AllowMismatch = False,
    tasks: Tasks = None,
    gate: Annotated[
        bool,
        typer.Option(
            "--gate",
            help="Regression gate on BASE NEW: exit 1 when NEW is worse by more than "
            "--max-drop with the bootstrap's confidence.",
        ),
    ] = False,
    max_drop: Annotated[
        float | None, typer.Option("--max-drop", help="Largest acceptable drop (--gate).")
    ] = None,
) -> None:
    """Compare runs: metrics per run, paired difference with a bootstrap CI, per task."""
    with writing_stdout():
        from tau_bench.cli.compare_checks import (
            check_gate_args,
            gate_exit,
            print_costs,
            print_variance,
            run_gate,
        )
        from tau_bench.cli.output_paths import check_output

        check_gate_args(gate, by_user_model, max_drop)
        outputs: dict[str, list[Path]] = {}
        if json_out is not None:
            check_output(json_out, "--json")
            # write_json_atomic writes `<out>.tmp` first, then renames it over `<out>`
            outputs[f"--json {json_out}"] = [json_out, json_out.with_name(json_out.name + ".tmp")]
        from tau_bench.analysis.clean_subset import comparison_dict, comparison_table
        from tau_bench.analysis.tables import matrix_table, paired_table, runs_table
        from tau_bench.results import write_json_atomic

        comparison = _compare(
            results,
            intersect=intersect,
            baseline=baseline,
            seed=seed,
            resamples=resamples,
            confidence=confidence,
            by_user_model=by_user_model,
            allow_mismatch=allow_mismatch,
            tasks=tasks,
            outputs=outputs,
            gate=gate,
        )
        console = stdout_console()
        console.print(runs_table(comparison))
        clean = comparison_table(comparison)  # official vs clean subset, τ³ runs only
        if clean is not None:
            console.print(clean)
        if comparison.paired:
            console.print(paired_table(comparison))
        if matrix:
            console.print(matrix_table(comparison))
        print_costs(console, comparison)
        if by_user_model:
            print_variance(console, comparison)
        gate_result = run_gate(console, comparison, max_drop) if gate else None
        for label, ids in comparison.dropped.items():
            note(f"{label}: {len(ids)} task(s) not in every run were left out (--intersect)")
        if json_out is not None:
            data = {**comparison.to_dict(), **comparison_dict(comparison)}
            try:
                write_json_atomic(
                    json_out, {**data, **({"gate": gate_result} if gate_result else {})}
                )
            except OSError as exc:  # a full disk, a file size limit, a special file system
                fail(f"--json: cannot write {shown_path(json_out)}: {exc.strerror or exc}")
            note(f"wrote {json_out}")
        gate_exit(gate_result)


def report(
    results: Results,
    output: Annotated[Path, typer.Option("-o", "--output", help="HTML file to write.")] = Path(
        "report.html"
    ),
    png_dir: Annotated[
        Path | None,
        typer.Option("--png-dir", help="Also write PNG charts here (needs matplotlib)."),
    ] = None,
    title: Annotated[str, typer.Option("--title", help="Page title.")] = "",
    intersect: Intersect = False,
    baseline: Baseline = None,
    seed: Seed = 0,
    resamples: Resamples = 10_000,
    confidence: Confidence = 0.95,
    by_user_model: ByUserModel = False,
    allow_mismatch: AllowMismatch = False,
    tasks: Tasks = None,
) -> None:
    """One self-contained HTML report: tables, charts, every trajectory."""
    with writing_stdout():
        from tau_bench.analysis.plots import PNG_NAMES
        from tau_bench.analysis.report import write_report
        from tau_bench.cli.output_paths import check_output

        if png_dir is not None:
            from tau_bench.analysis.plots import MissingPlotLibrary, _pyplot

            try:
                _pyplot()
            except MissingPlotLibrary as exc:
                fail(f"--png-dir: {exc}")
        check_output(output, "-o")
        outputs = {f"-o {output}": [output]}  # its temporary file has a new, random name
        if png_dir is not None:
            check_output(png_dir, "--png-dir", folder=True)
            outputs[f"--png-dir {png_dir}"] = [png_dir / name for name in PNG_NAMES]
        comparison = _compare(
            results,
            intersect=intersect,
            baseline=baseline,
            seed=seed,
            resamples=resamples,
            confidence=confidence,
            by_user_model=by_user_model,
            allow_mismatch=allow_mismatch,
            tasks=tasks,
            outputs=outputs,
        )
        warning = comparison.confounds.get("warning")
        if warning:  # the page's first heading says it too
            title = f"{warning} | {title or 'τ-bench comparison'}"
        if png_dir is not None:  # made before the page: a folder it cannot make stops here
            try:
                png_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                fail(f"--png-dir: cannot make {shown_path(png_dir)}: {exc.strerror or exc}")
        try:
            write_report(output, comparison, title=title)
        except OSError as exc:  # the previous report, if any, is left as it was
            fail(f"cannot write {shown_path(output)}: {exc.strerror or exc}")
        note(f"wrote {output} ({output.stat().st_size / 1e6:.1f} MB)")
        if png_dir is not None:
            from tau_bench.analysis.plots import write_pngs

            try:
                written = write_pngs(comparison, png_dir)
            except OSError as exc:
                fail(
                    f"--png-dir: cannot write the charts in {shown_path(png_dir)}: {exc.strerror or exc}"
                )
            for path in written:
                note(f"wrote {path}")
