"""What `tau run` shows while and after it runs: the progress bar (a line every N
episodes when stderr is not a terminal), the summary table, and the distinct episode
errors."""

from __future__ import annotations

import math
import os
import sys
import time
from typing import Any, TextIO

# Episodes between two progress lines when stderr is not a terminal (CI logs, nohup);
# unset: about a tenth of the run, at most 10. `0` turns the lines off.
EVERY_ENV = "TAU_PROGRESS_EVERY"


def error_examples(records: Any, limit: int = 3) -> list[str]:
    """One line per distinct error (kind and message), most frequent first."""
    from collections import Counter

    counts: Counter[tuple[str, str, str]] = Counter()
    for record in records:
        error = getattr(record, "error", None)
        if error:
            counts[
                (error.get("source", "?"), error.get("kind", "?"), error.get("message", ""))
            ] += 1
    lines = []
    for (source, kind, message), n in counts.most_common(limit):
        short = message if len(message) <= 300 else message[:297] + "..."
        lines.append(f"  {n} x {source} {kind}: {short}")
    if len(counts) > limit:
        lines.append(f"  ... and {len(counts) - limit} other error(s): see the results log")
    return lines


class RichProgress:
    """done/total, running pass rate, cost so far and ETA on stderr (TTY only)."""

    def __init__(self, console: Any, enabled: bool) -> None:
        self.console = console
        self.enabled = enabled
        self._progress: Any = None
        self._task: Any = None
        self._scored = 0
        self._passed = 0
        self._cost = 0.0
        self._errors = 0

    def started(self, total: int, done: list[Any]) -> None:
        from tau_bench.records import is_success

        for r in done:
            self._count(r, is_success)
        if not self.enabled:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("episodes", style="bold"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("pass {task.fields[rate]}"),
            TextColumn("${task.fields[cost]:.4f}"),
            TextColumn("errors {task.fields[errors]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(
            "run",
            total=total,
            completed=len(done),
            rate=self._rate(),
            cost=self._cost,
            errors=self._errors,
        )

    def _count(self, record: Any, is_success: Any) -> None:
        self._cost += record.agent_cost + record.user_cost
        if record.is_error:
            self._errors += 1
        else:
            self._scored += 1
            self._passed += 1 if is_success(record.reward) else 0

    def _rate(self) -> str:
        return f"{self._passed / self._scored:.1%}" if self._scored else "-"

    def episode_done(self, record: Any) -> None:
        from tau_bench.records import is_success

        self._count(record, is_success)
        if self._progress is not None:
            self._progress.update(
                self._task, advance=1, rate=self._rate(), cost=self._cost, errors=self._errors
            )

    def finished(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


class LineProgress(RichProgress):
    """The progress bar's numbers as one plain line every `every` episodes (and at the
    last one): a bar redrawn with carriage returns is noise in a CI log or nohup.out."""

    def __init__(self, stream: TextIO, every: int | None = None) -> None:
        super().__init__(console=None, enabled=False)
        self.stream = stream
        self.every = every
        self._total = 0
        self._done = 0
        self._start = 0.0
        self._resumed = 0

    def started(self, total: int, done: list[Any]) -> None:
        super().started(total, done)
        self._total, self._done, self._resumed = total, len(done), len(done)
        self._start = time.monotonic()
        if self.every is None:
            self.every = max(1, min(10, math.ceil(total / 10)))

    def episode_done(self, record: Any) -> None:
        super().episode_done(record)
        self._done += 1
        if self.every and (self._done % self.every == 0 or self._done == self._total):
            self.stream.write(self.line() + "\n")
            self.stream.flush()

    def line(self) -> str:
        """`episodes 10/40 (25%) · pass 80.0% · errors 0 · $0.0123 · 12s · eta 36s`."""
        elapsed = time.monotonic() - self._start
        ran = self._done - self._resumed
        left = self._total - self._done
        eta = f"{elapsed / ran * left:.0f}s" if ran and left else "-"
        share = f"{self._done / self._total:.0%}" if self._total else "-"
        return (
            f"episodes {self._done}/{self._total} ({share}) · pass {self._rate()} · "
            f"errors {self._errors} · ${self._cost:.4f} · {elapsed:.0f}s · eta {eta}"
        )


def make_progress(console: Any, quiet: bool) -> RichProgress:
    """The bar on a terminal, plain lines otherwise (see `EVERY_ENV`), nothing if quiet."""
    if quiet:
        return RichProgress(console, enabled=False)
    if console.is_terminal:
        return RichProgress(console, enabled=True)
    raw = os.environ.get(EVERY_ENV, "").strip()
    every = int(raw) if raw.isdigit() else None
    return LineProgress(sys.stderr, every)


def _fmt(value: Any, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def render_summary(summary: dict[str, Any]) -> Any:
    """The summary as a rich table."""
    from rich.table import Table

    table = Table(title=f"τ-bench run {summary.get('run_name', '')}", show_header=False)
    table.add_column("metric", style="bold")
    table.add_column("value", justify="right")
    table.add_row(
        "episodes",
        f"{summary['episodes_done']} / {summary['episodes_planned']} "
        f"({summary['episodes_scored']} scored)",
    )
    table.add_row("errors (not scored)", str(summary["errors"]))
    from tau_bench.error_classes import summary_rows

    for label, value in summary_rows(summary):
        table.add_row(label, value)
    table.add_row("average reward", _fmt(summary["avg_reward"], ".4f"))
    for k, v in summary["pass_hat_k"].items():
        table.add_row(f"pass^{k}", _fmt(v, ".4f"))
    from tau_bench.analysis.clean_subset import summary_rows as clean_subset_rows

    for name, value in clean_subset_rows(summary):  # official vs clean subset (τ³ registry)
        table.add_row(name, value)
    for title, key in (("user", "by_user_model"), ("domain", "by_domain")):
        groups = summary.get(key) or {}
        if len(groups) < 2:
            continue
        for name, group in groups.items():
            table.add_row(
                f"{title} {name}",
                f"reward {_fmt(group['avg_reward'], '.4f')}, "
                f"pass^1 {_fmt(group['pass_hat_k'].get('1'), '.4f')} "
                f"({group['scored']} scored)",
            )
    from tau_bench.cost import summary_rows as cost_rows

    for label, value in cost_rows(summary):
        table.add_row(label, value)
    tokens = summary["tokens"]
    for side in ("agent", "user"):
        t = tokens[side]
        table.add_row(
            f"tokens {side} (in / out)", f"{t['prompt_tokens']} / {t['completion_tokens']}"
        )
    lat = summary["latency"]
    table.add_row(
        "agent turn p50 / p95 (s)",
        f"{_fmt(lat['agent_turn']['p50'])} / {_fmt(lat['agent_turn']['p95'])}",
    )
    table.add_row(
        "episode p50 / p95 (s)", f"{_fmt(lat['episode']['p50'])} / {_fmt(lat['episode']['p95'])}"
    )
    if "wall_time" in summary:
        table.add_row("wall time (s)", _fmt(summary["wall_time"], ".1f"))
    files = summary.get("files", {})
    if files:
        table.add_row("results", files.get("results", ""))
    if files.get("mt_bench"):
        table.add_row("mt-bench", files["mt_bench"])
    return table
