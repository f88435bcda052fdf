"""`tau report`: one self-contained HTML file — tables, charts, every trajectory.

Self-contained means it opens from disk with no network: CSS, a small script (filters)
and SVG charts are inline, nothing is fetched. The page's Content-Security-Policy says so
to the browser too (`CSP`): nothing in a trajectory can make it load a URL (a tracking
image an agent or user wrote). Without JavaScript everything is still there
(trajectories are closed `<details>`); the script only filters and opens the episode a
heatmap cell links to.

Task ids may name their domain (`retail/12`, multi-domain runs): they appear as they are
in element ids (`#e-2-retail/12-0`) and in the task filter, where `12` also finds
`retail/12` and `airline/12`. This module is the page and its summary sections; the
heatmap and trajectories are `report_tasks`, the CSS and script `report_assets`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Sequence
from datetime import datetime
from html import escape
from pathlib import Path
from typing import Any

from tau_bench.analysis import svg
from tau_bench.analysis.clean_subset import html_section as clean_subset_html
from tau_bench.analysis.compare import Comparison
from tau_bench.analysis.loading import Run
from tau_bench.analysis.report_assets import CSS, JS
from tau_bench.analysis.report_tasks import heatmap, task_instructions, trajectories
from tau_bench.analysis.tables import fmt, fmt_cost, fmt_seconds, user_text
from tau_bench.error_classes import CLASSES

CSP = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
    "script-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
)
"""The page fetches nothing: its own inline style and script run, images only from
`data:` URLs; no request to any host (nor a `<base>` or a form that would make one)."""


def _legend(comparison: Comparison) -> str:
    items = "".join(
        f'<span style="margin-right:16px"><span class="swatch" '
        f'style="background:{svg.color(r.index - 1)}"></span>#{r.index} {escape(r.label)}</span>'
        for r in comparison.rows
    )
    return f"<p>{items}</p>"


def summary_table(comparison: Comparison) -> str:
    ks = comparison.ks
    head = (
        '<tr><th>#</th><th class="l">run</th><th class="l">agent</th><th class="l">user</th>'
        "<th>tasks</th><th>trials</th><th>avg reward</th>"
        + "".join(f"<th>pass^{k}</th>" for k in ks)
        + "<th>cost</th><th>cost / resolved</th><th>latency p50</th><th>latency p95</th>"
        '<th title="errored episodes: harness (excluded, re-run by --resume) / agent failure '
        '(scored 0) / agent unavailable (excluded)">errors h/f/u</th></tr>'
    )
    rows = []
    for r in comparison.rows:
        rows.append(
            f'<tr><td><span class="swatch" style="background:{svg.color(r.index - 1)}"></span>'
            f'{r.index}</td><td class="l" title="{escape(r.path)}">{escape(r.shown_label)}</td>'
            f'<td class="l">{escape(r.agent)}</td><td class="l">{escape(user_text(r))}</td>'
            f"<td>{r.tasks}</td><td>{r.trials}</td><td>{fmt(r.avg_reward)}</td>"
            + "".join(f"<td>{fmt(r.pass_hat_k.get(k))}</td>" for k in ks)
            + f"<td>{_money(r.costs.get('total'), r.cost_total)}</td>"
            f"<td>{_money(r.costs.get('per_resolved_task'), None)}</td>"
            f"<td>{fmt_seconds(r.latency_p50)}</td><td>{fmt_seconds(r.latency_p95)}</td>"
            f"<td>{_error_classes(r)}</td></tr>"
        )
    return f'<table class="summary"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def paired_section(comparison: Comparison) -> str:
    if not comparison.paired:
        return '<p class="muted">One run only: nothing to pair.</p>'
    conf = comparison.paired[0].confidence
    rows = "".join(
        f'<tr><td class="l">{escape(p.baseline)}</td><td class="l">{escape(p.other)}</td>'
        f"<td>{p.tasks}</td><td>{fmt(p.mean_baseline)}</td><td>{fmt(p.mean_other)}</td>"
        f"<td>{p.diff:+.3f}</td><td>[{p.low:+.3f}, {p.high:+.3f}]</td>"
        f"<td>{p.other_better} / {p.baseline_better} / {p.ties}</td>"
        f'<td class="l"><b>{escape(p.verdict)}</b></td></tr>'
        for p in comparison.paired
    )
    index = {r.label: r.index - 1 for r in comparison.rows}
    chart = svg.forest(
        [
            svg.Bar(f"{p.other} − {p.baseline}", p.diff, p.low, p.high, svg.color(index[p.other]))
            for p in comparison.paired
        ],
        title="paired difference in mean reward per task",
        x_label=f"difference in mean per-task reward ({conf:.0%} bootstrap CI)",
    )
    p0 = comparison.paired[0]
    return (
        '<table class="paired"><thead><tr><th class="l">baseline</th><th class="l">vs</th>'
        f"<th>tasks</th><th>baseline mean</th><th>other mean</th><th>diff</th><th>{conf:.0%} CI</th>"
        '<th>other better / worse / tie</th><th class="l">verdict</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
        f'<p class="muted">Mean reward per task (over its scored trials), other minus baseline; '
        f"the interval comes from {p0.resamples} bootstrap resamples of the tasks (seed "
        f"{p0.seed}). An interval that excludes 0 is a real difference at this level.</p>"
        f"{chart}"
    )


def pass_k_chart(comparison: Comparison) -> str:
    ks = comparison.ks
    series = [
        svg.Series(
            r.label,
            [(k, v) for k in ks if (v := r.pass_hat_k.get(k)) is not None],
            svg.color(r.index - 1),
        )
        for r in comparison.rows
    ]
    return svg.line_chart(
        series,
        title="pass^k by k",
        x_label="k (trials that must all succeed)",
        y_label="pass^k",
        x_values=ks,
    )


def cost_chart(comparison: Comparison) -> str:
    """Runs with no scored episode have no average reward: they are listed under the
    chart, never drawn at 0 (which would read as "every episode failed")."""
    points = [
        svg.Point(f"#{r.index}", r.cost_per_episode or 0.0, r.avg_reward, svg.color(r.index - 1))
        for r in comparison.rows
        if r.avg_reward is not None and (r.cost_total is not None or not r.episodes)
    ]
    chart = svg.scatter(
        points,
        title="cost vs reward",
        x_label="cost per episode (agent + user)",
        y_label="average reward",
    )
    return chart + _not_plotted(comparison)


def _not_plotted(comparison: Comparison) -> str:
    parts = []
    for why, missing in (
        ("no scored episode", [r for r in comparison.rows if r.avg_reward is None]),
        (
            "cost unknown: its sum overflowed",
            [
                r
                for r in comparison.rows
                if r.avg_reward is not None and r.cost_total is None and r.episodes
            ],
        ),
    ):
        if missing:
            names = ", ".join(f"#{r.index} {escape(r.label)}" for r in missing)
            parts.append(f'<p class="muted not-plotted">not plotted ({why}): {names}</p>')
    return "".join(parts)


def charts_section(comparison: Comparison) -> str:
    """pass^k (only when some run has several trials: with one, pass^1 is the average
    reward already in the table) and cost vs reward."""
    figures = []
    if comparison.max_k > 1:
        figures.append(
            f"<figure>{pass_k_chart(comparison)}<figcaption>pass^k: chance that k trials "
            "of a task all succeed, averaged over tasks</figcaption></figure>"
        )
    figures.append(
        f"<figure>{cost_chart(comparison)}<figcaption>cost per episode vs average reward "
        "(hosted agents report no cost: only the user simulator's)</figcaption></figure>"
    )
    heading = "pass^k and cost" if comparison.max_k > 1 else "Cost and reward"
    return (
        f'<section id="charts"><h2>{heading}</h2>{_legend(comparison)}'
        f'<div class="charts">{"".join(figures)}</div></section>'
    )


def _money(value: Any, fallback: float | None) -> str:
    """A cost, or `unknown` (never $0) when a part of it is unknown."""
    if value is None and fallback is None:
        return "unknown"
    return fmt_cost(float(value if value is not None else fallback or 0.0))


def _error_classes(row: Any) -> str:
    classes = row.error_classes or {}
    if not classes:
        return str(row.errors)
    return "/".join(str(classes.get(c, 0)) for c in CLASSES)


def changed_tasks_note(comparison: Comparison) -> str:
    """Tasks whose definition differs between the runs (their hashes), flagged."""
    changed = (comparison.confounds or {}).get("changed_tasks") or []
    if not changed:
        return ""
    return (
        '<p class="warn"><b>Task definitions differ between runs</b> for '
        + ", ".join(escape(str(t)) for t in changed)
        + ": each run's trajectories below show its own instruction.</p>"
    )


def render_report(
    comparison: Comparison, runs: Sequence[Run] | None = None, title: str = ""
) -> str:
    """The whole page as one string. The runs shown are the comparison's own (split by
    user model, task ids named by domain, one per row); `runs` is only used for a
    comparison built without them."""
    runs = comparison.runs or list(runs or [])
    title = title or "τ-bench comparison"
    env = ", ".join(dict.fromkeys(e for r in comparison.rows if r.env for e in r.env.split(",")))
    dropped = ""
    if comparison.dropped:
        dropped = (
            '<p class="muted">Compared on the shared tasks only (--intersect); left out: '
            + "; ".join(f"{escape(k)}: {len(v)} tasks" for k, v in comparison.dropped.items())
            + "</p>"
        )
    files = "".join(
        f"<li>#{r.index} {escape(r.label)}: <code>{escape(r.path)}</code> ({r.source_format})</li>"
        for r in comparison.rows
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{escape(title)}</h1><p class='muted'>{len(comparison.rows)} run(s), "
        f"{len(comparison.task_ids)} tasks{' of ' + escape(env) if env else ''} · generated "
        f"{datetime.now().astimezone().isoformat(timespec='seconds')}</p>"
        f"<details><summary>results files</summary><ul>{files}</ul></details>{dropped}</header>"
        '<nav><a href="#summary">comparison</a><a href="#paired">paired difference</a>'
        '<a href="#charts">charts</a><a href="#heatmap">per task</a>'
        '<a href="#trajectories">trajectories</a></nav>'
        f'<section id="summary"><h2>Comparison</h2>{summary_table(comparison)}'
        f"{changed_tasks_note(comparison)}</section>"
        f"{clean_subset_html(comparison)}"
        f'<section id="paired"><h2>Paired difference</h2>{paired_section(comparison)}</section>'
        f"{charts_section(comparison)}"
        '<section id="heatmap"><h2>Per task</h2><p class="muted">successes / scored trials '
        "(+Ne: errored trials); click a cell for its trajectories.</p>"
        f"{heatmap(comparison, task_instructions(runs))}</section>"
        f'<section id="trajectories"><h2>Trajectories</h2>{trajectories(comparison, runs)}'
        f"</section><script>{JS}</script></body></html>"
    )


def write_report(
    path: Path, comparison: Comparison, runs: Sequence[Run] | None = None, title: str = ""
) -> Path:
    """Write the page to `path` through a temporary file in its folder, renamed over it:
    a write that fails (a full disk, a file size limit) raises and leaves the previous
    report as it was and no temporary file. Through a symlink, its target is replaced."""
    html = render_report(comparison, runs, title)
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
    try:
        with contextlib.suppress(FileNotFoundError):  # keep a previous report's mode
            os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
        # A lone surrogate (from a JSON "\ud800") has no UTF-8 form: shown as "?".
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as fh:
            fd = -1
            fh.write(html)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return path
