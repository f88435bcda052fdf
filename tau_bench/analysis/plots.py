"""PNG versions of the report's charts, for slides and papers (needs matplotlib).

matplotlib is optional (`pip install 'tau-adapters[report]'`); `MissingPlotLibrary`
says so when it is absent. The Agg backend is used: no display needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tau_bench.analysis import svg
from tau_bench.analysis.compare import Comparison

PNG_NAMES = ("pass_k.png", "cost_reward.png", "per_task.png")
"""Every file `write_pngs` may write in its folder (pass_k.png only with several trials)."""


class MissingPlotLibrary(RuntimeError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise MissingPlotLibrary(
            "PNG plots need matplotlib: pip install 'tau-adapters[report]' "
            "(or pip install matplotlib)"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_pngs(comparison: Comparison, out_dir: Path, dpi: int = 120) -> list[Path]:
    """cost_reward.png, per_task.png and (with more than one trial) pass_k.png in
    `out_dir`; their paths. As in the HTML report: runs with equal values are drawn side
    by side, labels do not overlap, and a run with no scored episode is not drawn at 0.
    `out_dir` is made if missing; `tau report` checks it before writing anything."""
    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    ks = comparison.ks
    rows = comparison.rows

    if comparison.max_k > 1:
        fig, ax = plt.subplots(figsize=(6, 4))
        for i, row in enumerate(rows):
            pts = [(k, v) for k in ks if (v := row.pass_hat_k.get(k)) is not None]
            if not pts:  # nothing scored: no line, no legend entry
                continue
            shift, lift = svg.dodge(i, len(rows), step=0.04), svg.dodge(i, len(rows), step=0.012)
            ax.plot(
                [k + shift for k, _ in pts],
                [v + lift for _, v in pts],
                marker="o",
                color=svg.color(row.index - 1),
                label=f"#{row.index} {row.label}",
            )
        ax.set(xlabel="k", ylabel="pass^k", ylim=(-0.02, 1.04), xticks=ks, title="pass^k")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        written.append(_save(fig, plt, out_dir / "pass_k.png", dpi))

    fig, ax = plt.subplots(figsize=(6, 4))
    scored = [r for r in rows if r.avg_reward is not None and r.cost_total is not None]
    ticks = svg.nice_ticks(max((r.cost_per_episode or 0.0 for r in scored), default=0.0))
    width, height = 480.0, 300.0  # the axes in points, roughly: to spread and stack labels
    spots = svg.spread(
        [
            ((r.cost_per_episode or 0.0) / ticks[-1] * width, (1 - (r.avg_reward or 0.0)) * height)
            for r in scored
        ],
        radius=7.0,
    )
    labels = svg.label_positions([y - 8 for _, y in spots], top=0.0, bottom=height, gap=11.0)
    for row, (px, py), ly in zip(scored, spots, labels, strict=True):
        x = px / width * ticks[-1]
        y = 1 - py / height
        ax.scatter([x], [y], s=60, color=svg.color(row.index - 1), edgecolors="white", zorder=3)
        ax.annotate(
            f"#{row.index} {row.label}",
            (x, y),
            textcoords="offset points",
            xytext=(
                8 + max(qx for qx, qy in spots if abs(qx - px) < 20 and abs(qy - py) < 20) - px,
                py - ly,
            ),
            fontsize=8,
            arrowprops={"arrowstyle": "-", "color": svg.color(row.index - 1), "lw": 0.6}
            if abs(py - 8 - ly) > 1
            else None,
        )
    missing = [f"#{r.index}" for r in rows if r.avg_reward is None]
    title = "cost vs reward" + (
        f" (not plotted, nothing scored: {', '.join(missing)})" if missing else ""
    )
    ax.set(
        xlabel="cost per episode ($)",
        ylabel="average reward",
        ylim=(-0.04, 1.08),
        xlim=(-ticks[-1] * 0.03, ticks[-1] * 1.05),
        xticks=ticks,
        title=title,
    )
    ax.set_xticklabels([svg.money(v) for v in ticks])
    ax.grid(alpha=0.3)
    written.append(_save(fig, plt, out_dir / "cost_reward.png", dpi))

    tasks = comparison.task_ids
    grid = [
        [
            rate
            if (cell := comparison.matrix[row.label].get(t)) and (rate := cell.rate) is not None
            else float("nan")
            for row in comparison.rows
        ]
        for t in tasks
    ]
    height = max(3.0, 0.18 * len(tasks) + 1.2)
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * len(comparison.rows), height))
    image = ax.imshow(grid, aspect="auto", cmap="RdYlGn", vmin=0, vmax=1, interpolation="nearest")
    ax.set_xticks(range(len(comparison.rows)), [f"#{r.index}" for r in comparison.rows])
    ax.set_yticks(range(len(tasks)), [str(t) for t in tasks], fontsize=6)
    ax.set(xlabel="run", ylabel="task", title="success rate per task")
    fig.colorbar(image, ax=ax, fraction=0.08)
    written.append(_save(fig, plt, out_dir / "per_task.png", dpi))
    return written


def _save(fig: Any, plt: Any, path: Path, dpi: int) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
