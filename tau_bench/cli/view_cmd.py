"""`tau view RUN`: browse one run's episodes in the terminal.

The list shows each episode's outcome and why it did not pass (DB diff summary, outputs
not said, error and its class); filters narrow it (`--failed`, `--errored`, `--task 0-4
7`, `--trial 0`); an episode is expanded (trajectory, DB diff) when the filters leave
exactly one, or with `--expand`. On a terminal it then asks which episode to open, so
one can walk through the failures; piped (or `--no-interactive`) it prints and exits.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tau_bench.cli.errors import fail

if TYPE_CHECKING:
    from rich.console import Console

    from tau_bench.analysis.loading import Run
    from tau_bench.records import EpisodeRecord

PROMPT = "episode # to open, f failed, e errored, a all, t ID task, q quit> "


@dataclass(frozen=True)
class Filters:
    failed: bool = False
    errored: bool = False
    tasks: tuple[int | str, ...] = ()
    trial: int | None = None

    def describe(self) -> str:
        bits = [b for b, on in (("failed", self.failed), ("errored", self.errored)) if on]
        if self.tasks:
            from tau_bench.task_ids import ids_text

            bits.append(f"task {ids_text(self.tasks)}")
        if self.trial is not None:
            bits.append(f"trial {self.trial}")
        return ", ".join(bits) or "all"


def select(records: Sequence[EpisodeRecord], f: Filters) -> list[EpisodeRecord]:
    """The records the filters keep (`--failed` and `--errored` together: both kinds)."""
    from tau_bench.analysis.reasons import outcome
    from tau_bench.task_ids import sort_key

    wanted = {o for o, on in (("fail", f.failed), ("error", f.errored)) if on}
    tasks = set(f.tasks)
    out = []
    for r in records:
        if wanted and outcome(r) not in wanted:
            continue
        if tasks and r.task_id not in tasks and _index(r.task_id) not in tasks:
            continue
        if f.trial is not None and r.trial != f.trial:
            continue
        out.append(r)
    return sorted(out, key=lambda r: (sort_key(r.task_id), r.trial))


def _index(task_id: int | str) -> int | str:
    """`12` for `retail/12`: a plain `--task 12` also finds namespaced ids."""
    from tau_bench.task_ids import task_index

    index = task_index(task_id)
    return index if index is not None else task_id


def task_selection(text: str) -> list[int | str]:
    """`expand_task_ids(text)`; ValueError with its own message for a digit that is not
    ASCII (`²`, `①`: `isdigit` says yes, `int` says no)."""
    from tau_bench.task_ids import expand_task_ids

    if not text.isascii():
        bad = next(part for part in text.replace(",", " ").split() if not part.isascii())
        raise ValueError(f"task id must be an integer or DOMAIN/ID, got {bad!r}")
    return expand_task_ids(text)


def parse_tasks(values: Sequence[str]) -> tuple[int | str, ...]:
    out: list[int | str] = []
    for value in values:
        try:
            out.extend(task_selection(value))
        except ValueError as exc:
            fail(f"--task: {exc}")
    return tuple(out)


def view(
    results: Annotated[
        Path, typer.Argument(help="A run's results: its .jsonl log or τ-bench .json file.")
    ],
    failed: Annotated[
        bool, typer.Option("--failed", help="Only scored episodes that did not pass.")
    ] = False,
    errored: Annotated[
        bool, typer.Option("--errored", help="Only errored (not scored) episodes.")
    ] = False,
    task: Annotated[
        list[str] | None,
        typer.Option("--task", help="Only these tasks: --task 3, --task '0-4 7' (repeatable)."),
    ] = None,
    trial: Annotated[int | None, typer.Option("--trial", help="Only this trial.", min=0)] = None,
    expand: Annotated[
        bool, typer.Option("--expand", "-x", help="Expand every listed episode.")
    ] = False,
    system: Annotated[
        bool, typer.Option("--system", help="Show system prompts in full (clipped otherwise).")
    ] = False,
    interactive: Annotated[
        bool | None,
        typer.Option(
            "--interactive/--no-interactive",
            help="Ask which episode to open (default: when stdin and stdout are terminals).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Browse a run: episodes with outcome and failure reason, one expanded in full."""
    from tau_adapters.registry import one_line
    from tau_bench import terminal
    from tau_bench.analysis.loading import ResultsLoadError, load_run
    from tau_bench.cli.compare_cmd import escape_unencodable, unreadable_note, writing_stdout

    filters = Filters(failed, errored, parse_tasks(task or []), trial)
    try:
        run = load_run(results)
    except (ResultsLoadError, OSError) as exc:
        fail(one_line(str(exc)))  # a newline in a file name: still one line
    unreadable_note(run)
    if interactive is None:
        interactive = sys.stdin.isatty() and sys.stdout.isatty()
    with writing_stdout():
        escape_unencodable()
        console = terminal.console(highlight=False)
        shown = _show(console, run, filters, expand, system)
        if interactive:
            _browse(console, run, filters, system)
    if not interactive and not shown:
        raise SystemExit(1)


def _show(
    console: Console, run: Run, filters: Filters, expand: bool, system: bool
) -> list[EpisodeRecord]:
    """Print the list (and the expanded episodes); the records shown."""
    from tau_bench.cli.view_render import episode_table, print_episode

    chosen = select(run.records, filters)
    if not chosen:
        console.print(
            f"{run.label}: no episode matches ({filters.describe()}) among {len(run.records)}",
        )
        return []
    title = f"{run.label} · {run.agent} · {len(chosen)} of {len(run.records)} episodes"
    if filters.describe() != "all":
        title += f" ({filters.describe()})"
    console.print(episode_table(chosen, title))
    if expand or len(chosen) == 1:
        for record in chosen:
            print_episode(console, record, run.label, system)
    return chosen


def _browse(console: Console, run: Run, filters: Filters, system: bool) -> None:
    """The prompt loop: open an episode by its number, change filters, quit."""
    from tau_bench.cli.view_render import episode_table, print_episode

    current = filters
    while True:
        chosen = select(run.records, current)
        try:
            answer = input(PROMPT).strip()
        except (EOFError, KeyboardInterrupt):
            console.print()
            return
        if answer in ("q", "quit", "exit"):
            return
        if answer.isascii() and answer.isdigit() and 1 <= int(answer) <= len(chosen):
            print_episode(console, chosen[int(answer) - 1], run.label, system)
            continue
        if answer in ("f", "e", "a"):
            current = replace(
                filters, failed=answer == "f", errored=answer == "e", tasks=(), trial=None
            )
        elif answer.startswith("t "):
            try:
                current = replace(current, tasks=tuple(task_selection(answer[2:])))
            except ValueError as exc:
                console.print(f"not a task id: {exc}")
                continue
        else:
            console.print(f"? {answer!r}: a number from 1 to {len(chosen)}, f, e, a, t ID or q")
            continue
        shown = select(run.records, current)
        if shown:
            console.print(episode_table(shown, f"{run.label} ({current.describe()})"))
        else:
            console.print(f"no episode matches ({current.describe()})")
