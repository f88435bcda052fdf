"""PNG versions of the report's charts, for slides and papers (needs matplotlib).

matplotlib is optional (`pip install 'tau-adapters[report]'`); `MissingPlotLibrary`
says so when it is absent. The Agg backend is used: no display needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tau_bench.analysis import svg
from tau_bench.analysis.compare import Comparison


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
    """pass_k.png, cost_reward.png and per_task.png in `out_dir`; their paths."""
    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    ks = list(range(1, comparison.max_k + 1))

    fig, ax = plt.subplots(figsize=(6, 4))
    for row in comparison.rows:
        pts = [(k, v) for k in ks if (v := row.pass_hat_k.get(k)) is not None]
        ax.plot(
            [k for k, _ in pts],
            [v for _, v in pts],
            marker="o",
            color=svg.color(row.index - 1),
            label=f"#{row.index} {row.label}",
        )
    ax.set(xlabel="k", ylabel="pass^k", ylim=(-0.02, 1.04), xticks=ks, title="pass^k")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    written.append(_save(fig, plt, out_dir / "pass_k.png", dpi))

    fig, ax = plt.subplots(figsize=(6, 4))
    for row in comparison.rows:
        x, y = row.cost_per_episode or 0.0, row.avg_reward or 0.0
        ax.scatter([x], [y], s=60, color=svg.color(row.index - 1))
        ax.annotate(
            f"#{row.index} {row.label}",
            (x, y),
            textcoords="offset points",
            xytext=(6, 6),
            fontsize=8,
        )
    ax.set(
        xlabel="cost per episode ($)",
        ylabel="average reward",
        ylim=(-0.02, 1.04),
        title="cost vs reward",
    )
    ax.set_xlim(left=0)
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
