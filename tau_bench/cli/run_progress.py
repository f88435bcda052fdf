"""What `tau run` shows while and after it runs: the progress bar, the summary table,
and the distinct episode errors."""

from __future__ import annotations

from typing import Any


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
        from tau_bench.results import is_success

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
            TextColumn("[bold]episodes"),
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
        from tau_bench.results import is_success

        self._count(record, is_success)
        if self._progress is not None:
            self._progress.update(
                self._task, advance=1, rate=self._rate(), cost=self._cost, errors=self._errors
            )

    def finished(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


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
    table.add_row("average reward", _fmt(summary["avg_reward"], ".4f"))
    for k, v in summary["pass_hat_k"].items():
        table.add_row(f"pass^{k}", _fmt(v, ".4f"))
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
    cost = summary["cost"]
    table.add_row("cost agent / user", f"${cost['agent']:.4f} / ${cost['user']:.4f}")
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
