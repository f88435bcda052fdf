"""What `tau compare` / `tau report` add around the comparison itself: the refusal of
unlike runs (exit 3, `--allow-mismatch`), the variance table of `--by-user-model`, the
cost table, the regression gate (`--gate BASE NEW --max-drop D`), and the checks of the
output paths (`--json`, `-o`, `--png-dir`) made before any work."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tau_bench.cli.errors import fail, note
from tau_bench.output_files import same_file

if TYPE_CHECKING:
    from tau_bench.analysis.compare import Comparison
    from tau_bench.analysis.loading import Run


def check_confounds(
    runs: Sequence[Run], *, intersect: bool, allow_mismatch: bool, console: Any
) -> dict[str, Any]:
    """Refuse unlike runs (exit 3 after a table of what differs), unless
    `allow_mismatch`: then the warning is printed first on stdout and returned in the
    dict (`warning`) for the other outputs' first line. Runs on different domains keep
    their own refusal (exit 2)."""
    from tau_bench.analysis.compare import ComparisonError, align_task_ids, shared_tasks
    from tau_bench.analysis.confounds import MISMATCH_EXIT, check_runs, differences_table

    try:
        aligned = align_task_ids(runs)
        shared_tasks(aligned, intersect=True)  # different domains, no shared task: exit 2
    except ComparisonError as exc:
        fail(str(exc))
    check = check_runs(aligned, intersect=intersect)
    for label in check.no_manifest:
        note(f"{label}: no manifest (an older results file); compared on what it records")
    if check.ok:
        return check.to_dict()
    if not allow_mismatch:
        console.print(differences_table(check, aligned))
        fail(check.error_line(), code=MISMATCH_EXIT)
    check.allowed = True
    print(check.warning_line(), flush=True)
    console.print(differences_table(check, aligned))
    return {"warning": check.warning_line(), **check.to_dict()}


def print_variance(console: Any, comparison: Comparison) -> None:
    """The variance decomposition of each compared run (rows of one file together)."""
    from tau_bench.analysis.variance import decompose, variance_table

    keep = set(comparison.task_ids)
    groups: dict[str, tuple[str, list[Any]]] = {}
    for run in comparison.runs:
        label = run.label.rsplit(" [", 1)[0] if comparison.by_user_model else run.label
        entry = groups.setdefault(str(run.path), (label, []))
        entry[1].extend(r for r in run.records if r.task_id in keep)
    rows = {label: decompose(records) for label, records in groups.values()}
    console.print(variance_table(rows))


def run_gate(console: Any, comparison: Comparison, max_drop: float | None) -> dict[str, Any]:
    """Print the gate's verdict and the trials needed; exit 1 when NEW fails."""
    from tau_bench.analysis.gate import GATE_FAILED_EXIT, GateError, evaluate_gate

    if max_drop is None:
        fail("--gate needs --max-drop D (the largest acceptable drop in mean reward)")
    try:
        result = evaluate_gate(comparison, max_drop)
    except GateError as exc:
        fail(str(exc))
    for line in result.lines():
        print(line, flush=True)
    data = result.to_dict()
    data["exit_status"] = GATE_FAILED_EXIT if result.failed else 0
    return data


def gate_exit(gate: dict[str, Any] | None) -> None:
    """Exit with the gate's status, after every output was written."""
    if gate and gate.get("exit_status"):
        raise SystemExit(int(gate["exit_status"]))


def check_gate_args(gate: bool, by_user_model: bool, max_drop: float | None) -> None:
    if max_drop is not None and not gate:
        fail("--max-drop goes with --gate")
    if max_drop is not None and not (math.isfinite(max_drop) and 0 <= max_drop <= 1):
        # a drop in mean reward, and rewards are from 0 to 1
        fail(f"--max-drop must be a number from 0 to 1 (a drop in mean reward), not {max_drop}")
    if gate and by_user_model:
        fail("--gate compares two whole runs: leave out --by-user-model")


def run_files(results: Path) -> list[Path]:
    """The files a run consists of: its results file and the ones `tau run` writes next
    to it, which the loader reads with it (`<stem>.jsonl`, `<stem>.json`,
    `<stem>.summary.json`), whether they exist yet or not."""
    path = Path(results)
    stem = path.with_suffix("")
    return [
        path,
        *(
            p
            for p in (
                stem.with_name(stem.name + ".jsonl"),
                stem.with_name(stem.name + ".json"),
                stem.with_name(stem.name + ".summary.json"),
            )
            if p != path
        ),
    ]


def check_not_input(
    outputs: Mapping[str, Sequence[Path]], runs: Sequence[Run | tuple[str, Path]]
) -> None:
    """Refuse (one line, exit 2) an output that is one of the input runs' files (`runs`:
    loaded runs, or (label, results file) pairs): writing it would replace a run's
    results. `outputs` maps what the user wrote (`--json out.json`) to the files it
    writes (`out.json`, `out.json.tmp`). Every command that writes next to what it read
    (`compare --json`, `report -o`, `rescore -o`, `analyze -o`) checks with this, before
    any work (a judge's paid calls included)."""
    inputs = [run if isinstance(run, tuple) else (run.label, Path(run.path)) for run in runs]
    for option, paths in outputs.items():
        for out in paths:
            for label, results in inputs:
                for part in run_files(results):
                    if not same_file(out, part):
                        continue
                    what = "an input" if part == results else f"part of input run {label}"
                    fail(f"{option} would overwrite {part}, {what}: choose another output file")


def print_costs(console: Any, comparison: Comparison) -> dict[str, Any]:
    """The cost table: per compared row, and across runs when there are several."""
    from tau_bench.cost import across, cost_table

    rows: dict[str, dict[str, Any]] = {row.label: dict(row.costs) for row in comparison.rows}
    if len(rows) > 1:
        rows["all runs"] = across(rows)
    console.print(cost_table(rows))
    return rows
