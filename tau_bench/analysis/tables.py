"""The comparison as terminal tables (rich): runs, paired differences, per-task matrix.

Text from results files (labels, models: `run [openai/gpt-4o]`) goes into the cells as
it is: the product's consoles print with markup off (`tau_bench.terminal`).
"""

from __future__ import annotations

from typing import Any

from tau_bench.analysis.compare import Cell, Comparison, RunRow
from tau_bench.cost import money
from tau_bench.error_classes import (
    AGENT_UNAVAILABLE,
    AS_FAILURES,
    EXCLUDED,
    SHORT_LEGEND,
    counts_short,
)
from tau_bench.terminal import styled


def fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def fmt_seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s"


def fmt_cost(value: float | None) -> str:
    """`$0.0123`, or `unknown` for a cost that is not known (a sum that overflowed)."""
    return "unknown" if value is None else f"${value:.4f}"


def user_text(row: RunRow) -> str:
    """The user simulator's model, or the mix of a rotation run: `a ×4, b ×4` (episodes)."""
    if len(row.user_models) > 1:
        return ", ".join(f"{name} ×{n}" for name, n in row.user_models.items())
    return row.user or "-"


def cell_text(cell: Cell | None) -> str:
    """`c/n` successes over scored trials, `+Ne` when N trials errored."""
    if cell is None:
        return "·"
    text = f"{cell.successes}/{cell.scored}"
    return text + (f" +{cell.errors}e" if cell.errors else "")


def _cell_style(cell: Cell | None) -> str:
    if cell is None or cell.rate is None:
        return "dim"
    if cell.rate >= 1.0:
        return "green"
    return "red" if cell.rate == 0.0 else "yellow"


def runs_table(comparison: Comparison) -> Any:
    from rich.table import Table

    table = Table(title=f"Runs compared on {len(comparison.task_ids)} tasks", show_lines=False)
    table.add_column("#", justify="right")
    for name in ("run", "agent", "user"):
        table.add_column(name, overflow="fold")
    for name in ("tasks", "trials", "avg reward"):
        table.add_column(name, justify="right")
    for k in comparison.ks:
        table.add_column(f"pass^{k}", justify="right")
    for name in ("cost", "latency p50", "latency p95"):
        table.add_column(name, justify="right")
    table.add_column("errors h/f/u", justify="right")
    # The second convention, shown whenever an agent was unavailable in some run.
    alt = any(row.error_classes.get(AGENT_UNAVAILABLE) for row in comparison.rows)
    if alt:
        table.add_column("avg, unavail.=fail", justify="right")
    for row in comparison.rows:
        table.add_row(
            str(row.index),
            row.shown_label,
            row.agent,
            user_text(row),
            str(row.tasks),
            str(row.trials),
            fmt(row.avg_reward),
            *[fmt(row.pass_hat_k.get(k)) for k in comparison.ks],
            money(row.costs.get("total")) if row.costs else fmt_cost(row.cost_total),
            fmt_seconds(row.latency_p50),
            fmt_seconds(row.latency_p95),
            counts_short(row.error_classes),
            *([fmt(row.avg_reward_unavailable_failed)] if alt else []),
        )
    table.caption = SHORT_LEGEND + (
        f"; avg reward and pass^k: {EXCLUDED}; avg, unavail.=fail: {AS_FAILURES}" if alt else ""
    )
    return table


def paired_table(comparison: Comparison) -> Any:
    from rich.table import Table

    conf = comparison.paired[0].confidence if comparison.paired else 0.95
    table = Table(
        title="Paired difference on shared tasks (bootstrap over tasks)", show_lines=False
    )
    table.add_column("baseline")
    table.add_column("vs")
    for name in ("tasks", "baseline mean", "other mean", "diff", f"{conf:.0%} CI"):
        table.add_column(name, justify="right")
    table.add_column("other better / worse / tie", justify="right")
    table.add_column("verdict")
    for p in comparison.paired:
        style = "green" if p.significant and p.diff > 0 else "red" if p.significant else ""
        verdict = p.verdict
        table.add_row(
            p.baseline,
            p.other,
            str(p.tasks),
            fmt(p.mean_baseline),
            fmt(p.mean_other),
            f"{p.diff:+.3f}",
            f"[{p.low:+.3f}, {p.high:+.3f}]",
            f"{p.other_better} / {p.baseline_better} / {p.ties}",
            styled(verdict, style) if style else verdict,
        )
    return table


def matrix_table(comparison: Comparison) -> Any:
    from rich.table import Table

    table = Table(title="Per task: successes / scored trials (+Ne errored), run # as above")
    table.add_column("task", justify="right")
    for row in comparison.rows:
        table.add_column(f"#{row.index}", justify="center")
    for task in comparison.task_ids:
        cells = []
        for row in comparison.rows:
            cell = comparison.matrix[row.label].get(task)
            cells.append(styled(cell_text(cell), _cell_style(cell)))
        table.add_row(str(task), *cells)
    return table
