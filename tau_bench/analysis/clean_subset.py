"""Official score and clean-subset score side by side, for runs of suites with a registry.

Why: the official τ³ score counts tasks the known-issue registry marks as broken (they
fail in the original, or their data can mis-score a correct agent). Every summary,
`tau compare` and `tau report` show both numbers: the *official* one (all tasks, as the
leaderboard computes it) and the one on the *clean subset* (tasks with no excluding
registry entry), and count the trials that ran on known-broken tasks. Runs of suites
without a registry (τ-bench v1) get no section: only their official score is shown.

The one computation lives here; the runner summary, `tau run`'s table, compare and the
report call it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING, Any

from tau_bench.metrics import pass_hat_ks
from tau_bench.records import EpisodeRecord, is_success
from tau_bench.tau3.known_issues import KnownIssue, Registry, registry_for_env, split_task_key

if TYPE_CHECKING:
    from tau_bench.analysis.compare import Comparison

__all__ = [
    "CleanSubset",
    "clean_subset",
    "comparison_sections",
    "html_section",
    "record_issues",
    "summary_rows",
    "summary_section",
]


@dataclass
class CleanSubset:
    """One run's official and clean-subset figures, and what was left out and why."""

    registry: str
    official: dict[str, Any]
    clean: dict[str, Any]
    excluded_tasks: dict[str, list[str]] = field(default_factory=dict)  # task -> issue ids
    flagged_trials: int = 0
    links: dict[str, str] = field(default_factory=dict)  # issue id -> link
    notes: dict[str, int] = field(default_factory=dict)  # weak-signal issue id -> trials

    def to_dict(self) -> dict[str, Any]:
        return {
            "registry": self.registry,
            "official": self.official,
            "clean": self.clean,
            "excluded_tasks": self.excluded_tasks,
            "flagged_trials": self.flagged_trials,
            "links": self.links,
            "notes": self.notes,
        }


def _domain_name(suite_domain: str | None) -> str | None:
    """`tau3/airline` → `airline`."""
    return None if suite_domain is None else suite_domain.rsplit("/", 1)[-1]


def _registry(env: str | None, records: Sequence[EpisodeRecord]) -> Registry | None:
    for name in [*(env or "").split(","), *(r.domain for r in records)]:
        registry = registry_for_env(name.strip() or None)
        if registry is not None:
            return registry
    return None


def record_issues(record: EpisodeRecord, env: str | None, registry: Registry) -> list[KnownIssue]:
    """The registry entries about this record's task (empty when none or unknown)."""
    suite_domain, tid = split_task_key(record.task_id, env)
    domain = _domain_name(record.domain or suite_domain)
    task_id = record.task.get("id") if isinstance(record.task, dict) else None
    if domain is None:
        return []
    return registry.issues_for(domain, str(task_id if task_id is not None else tid))


def _figures(records: Sequence[EpisodeRecord], num_trials: int) -> dict[str, Any]:
    scored = [r for r in records if not r.is_error]
    return {
        "tasks": len({r.task_id for r in records}),
        "episodes": len(records),
        "scored": len(scored),
        "avg_reward": sum(r.reward or 0.0 for r in scored) / len(scored) if scored else None,
        "successes": sum(1 for r in scored if is_success(r.reward)),
        "pass_hat_k": {str(k): v for k, v in pass_hat_ks(records, num_trials).items()},
    }


def clean_subset(
    records: Iterable[EpisodeRecord], env: str | None, num_trials: int
) -> CleanSubset | None:
    """Both figures for one run; None when its suite has no registry (v1 runs)."""
    records = list(records)
    registry = _registry(env, records)
    if registry is None:
        return None
    clean: list[EpisodeRecord] = []
    excluded: dict[str, list[str]] = {}
    links: dict[str, str] = {}
    notes: dict[str, int] = {}
    flagged = 0
    for r in records:
        issues = record_issues(r, env, registry)
        for e in issues:
            if not e.excludes:
                notes[e.id] = notes.get(e.id, 0) + 1
                links[e.id] = e.source.link()
        bad = [e for e in issues if e.excludes]
        if not bad:
            clean.append(r)
            continue
        flagged += 1
        excluded[str(r.task_id)] = [e.id for e in bad]
        links.update({e.id: e.source.link() for e in bad})
    return CleanSubset(
        registry=registry.label,
        official=_figures(records, num_trials),
        clean=_figures(clean, num_trials),
        excluded_tasks=dict(sorted(excluded.items())),
        flagged_trials=flagged,
        links=links,
        notes=dict(sorted(notes.items())),
    )


def summary_section(
    records: Iterable[EpisodeRecord], env: str | None, num_trials: int
) -> dict[str, Any]:
    """`{"clean_subset": {...}}` to merge into a run summary; `{}` for v1 runs."""
    result = clean_subset(records, env, num_trials)
    return {} if result is None else {"clean_subset": result.to_dict()}


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def summary_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for `tau run`'s summary table (none when the summary has no section)."""
    section = summary.get("clean_subset")
    if not section:
        return []
    off, cln = section["official"], section["clean"]
    notes = section.get("notes") or {}
    rows = [
        ("registry", section["registry"]),
        (
            "official reward / pass^1",
            f"{_fmt(off['avg_reward'])} / {_fmt(off['pass_hat_k'].get('1'))} "
            f"({off['tasks']} tasks)",
        ),
        (
            "clean-subset reward / pass^1",
            f"{_fmt(cln['avg_reward'])} / {_fmt(cln['pass_hat_k'].get('1'))} "
            f"({cln['tasks']} tasks)",
        ),
        (
            "trials on known-broken tasks",
            f"{section['flagged_trials']}"
            + (f" ({', '.join(section['excluded_tasks'])})" if section["excluded_tasks"] else ""),
        ),
    ]
    if notes:
        rows.append(
            (
                "weak-signal notes (kept)",
                ", ".join(f"{i}: {n} trials" for i, n in notes.items()),
            )
        )
    return rows


def comparison_sections(comparison: Comparison) -> list[tuple[str, CleanSubset | None]]:
    """(run label, figures on the compared tasks) per compared run, in row order."""
    keep = set(comparison.task_ids)
    runs = {r.label: r for r in comparison.runs}
    out: list[tuple[str, CleanSubset | None]] = []
    for row in comparison.rows:
        run = runs.get(row.label)
        if run is None:
            out.append((row.label, None))
            continue
        records = [r for r in run.records if r.task_id in keep]
        out.append((row.label, clean_subset(records, run.env, run.num_trials)))
    return out


def comparison_table(comparison: Comparison) -> Any:
    """A rich table for `tau compare`, or None when no compared run has a registry."""
    sections = comparison_sections(comparison)
    if all(s is None for _, s in sections):
        return None
    from rich.table import Table

    table = Table(title="Official vs clean subset (known-issue registry)")
    for col in ("run", "registry", "official", "pass^1", "clean", "pass^1 ", "broken trials"):
        table.add_column(col, justify="left" if col in ("run", "registry") else "right")
    for label, s in sections:
        if s is None:
            table.add_row(label, "-", "-", "-", "-", "-", "-")
            continue
        table.add_row(
            label,
            s.registry,
            f"{_fmt(s.official['avg_reward'])} ({s.official['tasks']})",
            _fmt(s.official["pass_hat_k"].get("1")),
            f"{_fmt(s.clean['avg_reward'])} ({s.clean['tasks']})",
            _fmt(s.clean["pass_hat_k"].get("1")),
            str(s.flagged_trials),
        )
    return table


def comparison_dict(comparison: Comparison) -> dict[str, Any]:
    """`{"clean_subset": {label: section}}` for `tau compare --json`; `{}` without registry."""
    sections = {label: s.to_dict() for label, s in comparison_sections(comparison) if s}
    return {"clean_subset": sections} if sections else {}


def html_section(comparison: Comparison) -> str:
    """The report's section: both scores per run, then the flagged tasks with sources."""
    sections = comparison_sections(comparison)
    if all(s is None for _, s in sections):
        return ""
    rows = []
    flagged: dict[str, set[str]] = {}
    links: dict[str, str] = {}
    noted: set[str] = set()
    for label, s in sections:
        if s is None:
            rows.append(f"<tr><th>{escape(label)}</th>" + "<td>-</td>" * 5 + "</tr>")
            continue
        rows.append(
            f"<tr><th>{escape(label)}</th><td>{escape(s.registry)}</td>"
            f"<td>{_fmt(s.official['avg_reward'])} ({s.official['tasks']} tasks)</td>"
            f"<td>{_fmt(s.clean['avg_reward'])} ({s.clean['tasks']} tasks)</td>"
            f"<td>{_fmt(s.clean['pass_hat_k'].get('1'))}</td><td>{s.flagged_trials}</td></tr>"
        )
        for task, ids in s.excluded_tasks.items():
            flagged.setdefault(task, set()).update(ids)
        links.update(s.links)
        noted.update(s.notes)
    items = "".join(
        f"<li>task {escape(task)}: "
        + ", ".join(_link(i, links.get(i, "")) for i in sorted(ids))
        + "</li>"
        for task, ids in sorted(flagged.items())
    )
    return (
        '<section id="clean-subset"><h2>Official vs clean subset</h2>'
        '<p class="muted">The official score counts every task; the clean subset leaves out '
        "tasks the known-issue registry marks as broken. Trials on those tasks are flagged "
        "below.</p><table><thead><tr><th>run</th><th>registry</th><th>official reward</th>"
        "<th>clean-subset reward</th><th>clean pass^1</th><th>trials on broken tasks</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        + (f"<ul>{items}</ul>" if items else "")
        + (
            '<p class="muted">Weak-signal notes (tasks kept in both scores): '
            + ", ".join(_link(i, links.get(i, "")) for i in sorted(noted))
            + "</p>"
            if noted
            else ""
        )
        + "</section>"
    )


def _link(issue_id: str, link: str) -> str:
    if link.startswith("https://"):
        return f'<a href="{escape(link)}">{escape(issue_id)}</a>'
    return f"{escape(issue_id)} ({escape(link)})"
