"""The per-task parts of the `tau report` page: the heatmap and every trajectory.

Task ids may name their domain (`retail/12`, multi-domain runs): they appear as they are
in element ids (`#e-2-retail/12-0`), which the heatmap cells link to.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from html import escape
from urllib.parse import quote

from tau_bench.analysis import svg
from tau_bench.analysis.compare import Cell, Comparison
from tau_bench.analysis.episode_html import episode_html
from tau_bench.analysis.loading import Run
from tau_bench.analysis.shown import prompt_shown, shown
from tau_bench.analysis.tables import cell_text
from tau_bench.records import EpisodeRecord
from tau_bench.task_ids import TaskId, sort_key


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


def task_instructions(runs: Sequence[Run]) -> dict[TaskId, str]:
    """Task id -> instruction, the first run's that has one (the heatmap's column: the
    runs of one comparison share their tasks). Each run's trajectories show its own."""
    out: dict[TaskId, str] = {}
    for run in runs:
        for r in run.records:
            text = r.task.get("instruction") if isinstance(r.task, dict) else None
            if text and r.task_id not in out:
                out[r.task_id] = shown(str(text))
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
        instructions = task_instructions([run])
        records = [r for r in run.records if r.task_id in keep]
        by_task: dict[TaskId, list[EpisodeRecord]] = defaultdict(list)
        for r in sorted(records, key=lambda r: (sort_key(r.task_id), r.trial)):
            by_task[r.task_id].append(r)
        refs = _system_refs(records)
        prompts = "".join(
            f"<details><summary>{escape(name)} ({len(text)} chars)</summary>"
            f"<pre>{escape(prompt_shown(text))}</pre></details>"
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
