"""`tau report`: one self-contained HTML file — tables, charts, every trajectory.

Self-contained means it opens from disk with no network: CSS, a small script (filters)
and SVG charts are inline, nothing is fetched. Without JavaScript everything is still
there (trajectories are closed `<details>`); the script only filters and opens the
episode a heatmap cell links to.

Task ids may name their domain (`retail/12`, multi-domain runs): they appear as they are
in element ids (`#e-2-retail/12-0`) and in the task filter, where `12` also finds
`retail/12` and `airline/12`.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from html import escape
from pathlib import Path
from urllib.parse import quote

from tau_bench.analysis import svg
from tau_bench.analysis.clean_subset import html_section as clean_subset_html
from tau_bench.analysis.compare import Cell, Comparison
from tau_bench.analysis.episode_html import episode_html
from tau_bench.analysis.loading import Run
from tau_bench.analysis.tables import cell_text, fmt, fmt_cost, fmt_seconds, user_text
from tau_bench.results import EpisodeRecord
from tau_bench.task_ids import TaskId, sort_key

CSS = """
:root{--fg:#1d232a;--muted:#66707a;--line:#d9dee3;--bg:#fff;--soft:#f5f7f9}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg);margin:0;padding:0 24px 48px;max-width:1280px}
h1{font-size:22px;margin:20px 0 4px}h2{font-size:18px;margin:28px 0 8px;
border-bottom:1px solid var(--line);padding-bottom:4px}h3{font-size:16px;margin:20px 0 6px}
h5{margin:10px 0 4px;font-size:13px}
nav a{margin-right:14px}.muted{color:var(--muted)}
table{border-collapse:collapse;font-size:13px}th,td{border:1px solid var(--line);
padding:3px 8px;text-align:right;vertical-align:top}th{background:var(--soft)}
td.l,th.l{text-align:left}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px}
.charts{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}
svg .grid{stroke:#e6e9ec}svg .zero{stroke:#555;stroke-dasharray:3 3}svg .axis{stroke:#888}
svg .tick{font-size:11px;fill:#555}svg .label{font-size:12px;fill:#333}
svg .pt{font-size:11px;fill:#222}
table.heat td{padding:0;text-align:center}table.heat td a{display:block;padding:2px 6px;
color:#111;text-decoration:none;min-width:46px}table.heat td.l{padding:2px 6px;max-width:520px;
white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.filters{position:sticky;top:0;background:var(--bg);padding:8px 0;border-bottom:1px solid
var(--line);z-index:2}.filters label{margin-right:14px}
details.task{border:1px solid var(--line);border-radius:6px;margin:6px 0;padding:4px 10px}
details.task>summary{cursor:pointer;font-weight:600}
details.episode{margin:6px 0 6px 10px;border-left:3px solid var(--line);padding-left:10px}
details.episode>summary{cursor:pointer}
.badge{padding:0 6px;border-radius:8px;font-size:12px;color:#fff}
.badge.pass{background:#1a9850}.badge.fail{background:#d73027}.badge.error{background:#777}
.conv{margin:8px 0}
.msg{margin:6px 0;padding:6px 10px;border-radius:6px;max-width:980px}
.msg .who{font-size:11px;letter-spacing:.04em;color:var(--muted)}
.msg .text{white-space:pre-wrap}.msg.user{background:#eef4ff}.msg.agent{background:#f1f8ef}
.msg.tool{background:var(--soft);margin-left:28px}.msg.system{background:var(--soft)}
.call .fn{font-family:ui-monospace,monospace;font-weight:600}
pre{white-space:pre-wrap;word-break:break-word;margin:2px 0;font:12px/1.4 ui-monospace,
SFMono-Regular,Menlo,monospace}
.verdict{margin:8px 0;padding:6px 10px;border-radius:6px}.verdict.pass{background:#e3f4e6}
.verdict.fail{background:#fde6e4}.verdict.error{background:#eee}
.warn{color:#8a5a00}table.diff td,table.diff th{text-align:left}
.instr{white-space:pre-wrap;background:var(--soft);padding:6px 10px;border-radius:6px}
details.episode>summary .why{color:#9b2c20;font-size:13px}
.msg .md p{margin:2px 0}.msg .md ul,.msg .md ol{margin:2px 0;padding-left:22px}
.msg .md table{margin:4px 0}.msg .md code{background:#0000000d;padding:0 3px;border-radius:3px}
.msg.sysref{font-size:12px;color:var(--muted)}
"""

JS = """
(function () {
  var q = new URLSearchParams(location.search);
  var run = document.getElementById('f-run');
  var outcome = document.getElementById('f-outcome');
  var task = document.getElementById('f-task');
  if (q.get('run')) run.value = q.get('run');
  if (q.get('outcome')) outcome.value = q.get('outcome');
  if (q.get('task')) task.value = q.get('task');
  function apply() {
    var r = run.value, o = outcome.value, t = task.value.trim();
    var shown = 0, total = 0;
    document.querySelectorAll('section.run').forEach(function (sec) {
      var runOk = !r || sec.dataset.run === r, inRun = 0;
      sec.querySelectorAll('details.task').forEach(function (td) {
        var dt = td.dataset.task;
        var taskOk = !t || dt === t || dt.slice(-t.length - 1) === '/' + t, n = 0;
        td.querySelectorAll('details.episode').forEach(function (ep) {
          total += 1;
          var oc = ep.dataset.outcome;
          var ok = runOk && taskOk && (!o || oc === o || (o === 'notpass' && oc !== 'pass'));
          ep.hidden = !ok;
          if (ok) n += 1;
        });
        td.hidden = n === 0;
        inRun += n;
      });
      sec.hidden = inRun === 0;
      shown += inRun;
    });
    document.getElementById('f-count').textContent = shown + ' of ' + total + ' episodes shown';
  }
  function openHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id ? document.getElementById(id) : null;
    if (!el || !el.closest('#trajectories')) return;
    if (el.closest('[hidden]')) {
      run.value = ''; outcome.value = ''; task.value = ''; apply();
    }
    for (var p = el; p; p = p.parentElement) { if (p.tagName === 'DETAILS') p.open = true; }
    el.scrollIntoView();
  }
  [run, outcome, task].forEach(function (el) { el.addEventListener('input', apply); });
  window.addEventListener('hashchange', openHash);
  apply();
  openHash();
  document.body.setAttribute('data-ready', '1');
})();
"""


def _rate_color(cell: Cell | None) -> str:
    """Red (0) through yellow to green (all trials passed); grey if nothing scored."""
    if cell is None or cell.rate is None:
        return "#e0e0e0"
    stops = [(0.0, (215, 48, 39)), (0.5, (254, 224, 139)), (1.0, (26, 152, 80))]
    rate = cell.rate
    for (a, ca), (b, cb) in itertools.pairwise(stops):
        if rate <= b:
            f = (rate - a) / (b - a)
            rgb = tuple(round(x + (y - x) * f) for x, y in zip(ca, cb, strict=True))
            return "#{:02x}{:02x}{:02x}".format(*rgb)
    return "#1a9850"


def _legend(comparison: Comparison) -> str:
    items = "".join(
        f'<span style="margin-right:16px"><span class="swatch" '
        f'style="background:{svg.color(r.index - 1)}"></span>#{r.index} {escape(r.label)}</span>'
        for r in comparison.rows
    )
    return f"<p>{items}</p>"


def summary_table(comparison: Comparison) -> str:
    ks = range(1, comparison.max_k + 1)
    head = (
        '<tr><th>#</th><th class="l">run</th><th class="l">agent</th><th class="l">user</th>'
        "<th>tasks</th><th>trials</th><th>avg reward</th>"
        + "".join(f"<th>pass^{k}</th>" for k in ks)
        + "<th>cost</th><th>latency p50</th><th>latency p95</th><th>errors</th></tr>"
    )
    rows = []
    for r in comparison.rows:
        rows.append(
            f'<tr><td><span class="swatch" style="background:{svg.color(r.index - 1)}"></span>'
            f'{r.index}</td><td class="l" title="{escape(r.path)}">{escape(r.label)}</td>'
            f'<td class="l">{escape(r.agent)}</td><td class="l">{escape(user_text(r))}</td>'
            f"<td>{r.tasks}</td><td>{r.trials}</td><td>{fmt(r.avg_reward)}</td>"
            + "".join(f"<td>{fmt(r.pass_hat_k.get(k))}</td>" for k in ks)
            + f"<td>{fmt_cost(r.cost_total)}</td><td>{fmt_seconds(r.latency_p50)}</td>"
            f"<td>{fmt_seconds(r.latency_p95)}</td><td>{r.errors}</td></tr>"
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
    ks = list(range(1, comparison.max_k + 1))
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
        if r.avg_reward is not None
    ]
    chart = svg.scatter(
        points,
        title="cost vs reward",
        x_label="cost per episode (agent + user)",
        y_label="average reward",
    )
    return chart + _not_plotted(comparison)


def _not_plotted(comparison: Comparison) -> str:
    missing = [r for r in comparison.rows if r.avg_reward is None]
    if not missing:
        return ""
    names = ", ".join(f"#{r.index} {escape(r.label)}" for r in missing)
    return f'<p class="muted not-plotted">not plotted (no scored episode): {names}</p>'


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


def _instructions(runs: Sequence[Run]) -> dict[TaskId, str]:
    """Task id -> instruction, the first run's that has one (the heatmap's column: the
    runs of one comparison share their tasks). Each run's trajectories show its own."""
    out: dict[TaskId, str] = {}
    for run in runs:
        for r in run.records:
            text = r.task.get("instruction") if isinstance(r.task, dict) else None
            if text and r.task_id not in out:
                out[r.task_id] = str(text)
    return out


def _href(prefix: str, task_id: TaskId) -> str:
    """`#<prefix><id>` for an href (the id percent-encoded, `/` kept), HTML-escaped."""
    return escape("#" + prefix + quote(str(task_id), safe="/"))


def heatmap(comparison: Comparison, instructions: dict[TaskId, str]) -> str:
    head = (
        '<tr><th>task</th><th class="l">instruction</th>'
        + "".join(f'<th title="{escape(r.label)}">#{r.index}</th>' for r in comparison.rows)
        + "</tr>"
    )
    body = []
    for t in comparison.task_ids:
        instr = instructions.get(t, "")
        cells = []
        for r in comparison.rows:
            cell = comparison.matrix[r.label].get(t)
            cells.append(
                f'<td style="background:{_rate_color(cell)}"><a href="{_href(f"t-{r.index}-", t)}" '
                f'title="{escape(r.label)}, task {escape(str(t))}">{escape(cell_text(cell))}</a></td>'
            )
        body.append(
            f"<tr><th>{escape(str(t))}</th>"
            f'<td class="l" title="{escape(instr)}">{escape(instr[:110])}</td>'
            + "".join(cells)
            + "</tr>"
        )
    return (
        '<table class="heat"><thead>'
        + head
        + "</thead><tbody>"
        + "".join(body)
        + "</tbody></table>"
    )


def _system_refs(records: Sequence[EpisodeRecord]) -> dict[str, str]:
    """Distinct system prompts of a run, numbered (the page shows each in full once)."""
    refs: dict[str, str] = {}
    for r in records:
        for m in r.messages:
            if m.get("role") == "system":
                text = str(m.get("content") or "")
                refs.setdefault(text, f"system prompt {len(refs) + 1} of this run")
    return refs


def trajectories(comparison: Comparison, runs: Sequence[Run]) -> str:
    """Every episode of the compared tasks, by run (one section per row) and task."""
    keep = set(comparison.task_ids)
    options = "".join(
        f'<option value="{r.index}">#{r.index} {escape(r.label)}</option>' for r in comparison.rows
    )
    parts = [
        '<div class="filters"><label>run <select id="f-run"><option value="">all</option>'
        f"{options}</select></label>"
        '<label>outcome <select id="f-outcome"><option value="">all</option>'
        '<option value="notpass">not passed</option><option value="fail">failed</option>'
        '<option value="error">errored</option><option value="pass">passed</option>'
        "</select></label>"
        '<label>task <input id="f-task" size="5" placeholder="id"></label>'
        '<span id="f-count" class="muted"></span></div>'
    ]
    for row, run in zip(comparison.rows, runs, strict=True):
        instructions = _instructions([run])
        records = [r for r in run.records if r.task_id in keep]
        by_task: dict[TaskId, list[EpisodeRecord]] = defaultdict(list)
        for r in sorted(records, key=lambda r: (sort_key(r.task_id), r.trial)):
            by_task[r.task_id].append(r)
        refs = _system_refs(records)
        prompts = "".join(
            f"<details><summary>{escape(name)} ({len(text)} chars)</summary>"
            f"<pre>{escape(text)}</pre></details>"
            for text, name in refs.items()
        )
        tasks = []
        for t, eps in by_task.items():
            cell = comparison.matrix[row.label].get(t)
            instr = instructions.get(t, "")
            episodes = "".join(
                episode_html(e, escape(f"e-{row.index}-{t}-{e.trial}"), refs) for e in eps
            )
            tid = escape(str(t))
            tasks.append(
                f'<details class="task" id="t-{row.index}-{tid}" data-task="{tid}"><summary>'
                f"task {tid} · {escape(cell_text(cell))} · "
                f'<span class="muted">{escape(instr[:120])}</span></summary>'
                f'<div class="instr">{escape(instr)}</div>{episodes}</details>'
            )
        parts.append(
            f'<section class="run" data-run="{row.index}"><h3><span class="swatch" '
            f'style="background:{svg.color(row.index - 1)}"></span>#{row.index} '
            f"{escape(row.label)} <span class='muted'>({escape(row.agent)})</span></h3>"
            f"{prompts}{''.join(tasks)}</section>"
        )
    return "".join(parts)


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
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{escape(title)}</h1><p class='muted'>{len(comparison.rows)} run(s), "
        f"{len(comparison.task_ids)} tasks{' of ' + escape(env) if env else ''} · generated "
        f"{datetime.now().astimezone().isoformat(timespec='seconds')}</p>"
        f"<details><summary>results files</summary><ul>{files}</ul></details>{dropped}</header>"
        '<nav><a href="#summary">comparison</a><a href="#paired">paired difference</a>'
        '<a href="#charts">charts</a><a href="#heatmap">per task</a>'
        '<a href="#trajectories">trajectories</a></nav>'
        f'<section id="summary"><h2>Comparison</h2>{summary_table(comparison)}</section>'
        f"{clean_subset_html(comparison)}"
        f'<section id="paired"><h2>Paired difference</h2>{paired_section(comparison)}</section>'
        f"{charts_section(comparison)}"
        '<section id="heatmap"><h2>Per task</h2><p class="muted">successes / scored trials '
        "(+Ne: errored trials); click a cell for its trajectories.</p>"
        f"{heatmap(comparison, _instructions(runs))}</section>"
        f'<section id="trajectories"><h2>Trajectories</h2>{trajectories(comparison, runs)}'
        f"</section><script>{JS}</script></body></html>"
    )


def write_report(
    path: Path, comparison: Comparison, runs: Sequence[Run] | None = None, title: str = ""
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(comparison, runs, title), encoding="utf-8")
    return path
