"""Refuse to compare unlike runs: what, besides the agent, differs between them.

A comparison is only about the agent when everything else is the same: the task set,
each task's definition, the suite's data version, the user simulator (strategy and
model) and the judge. `check_runs` reads each run's manifest (`tau_bench.manifest`)
and, for what a file without one still says, its records: task definitions are
compared per task by hash (`task_digest` of each record's task), never by the first
run's text. A value a run does not record is unknown and never a difference; the run
is listed as "no manifest". The agent may differ: that is the point.

`tau compare` / `tau report` exit with status 3 on any difference, printing
`differences_table`, unless `--allow-mismatch`: then every output's first line is
`warning_line`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tau_bench.analysis.loading import Run
from tau_bench.manifest import task_digest
from tau_bench.task_ids import TaskId, ids_text, sorted_ids

MISMATCH_EXIT = 3
NO_MANIFEST = "no manifest"
UNKNOWN = "?"


@dataclass
class Difference:
    """One thing that differs: per run label, its value (UNKNOWN when not recorded)."""

    what: str
    values: dict[str, str]
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"what": self.what, "values": self.values, "detail": self.detail}


@dataclass
class ConfoundCheck:
    """The result of `check_runs`: the differences, runs without a manifest, and the
    tasks whose definition differs between runs (for the report's flags)."""

    differences: list[Difference]
    no_manifest: list[str] = field(default_factory=list)
    changed_tasks: list[TaskId] = field(default_factory=list)
    allowed: bool = False

    @property
    def ok(self) -> bool:
        return not self.differences

    def what(self) -> str:
        return ", ".join(d.what for d in self.differences)

    def warning_line(self) -> str:
        """The first line of every output of a comparison made with --allow-mismatch."""
        return (
            f"WARNING: comparing unlike runs (--allow-mismatch): they differ in {self.what()}; "
            "a difference in scores may come from these, not from the agent"
        )

    def error_line(self) -> str:
        return (
            f"runs differ in {self.what()} (table above); a comparison would credit the "
            "agent with what the setup did: pass --allow-mismatch to compare anyway"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "allowed": self.allowed,
            "differences": [d.to_dict() for d in self.differences],
            "no_manifest": self.no_manifest,
            "changed_tasks": [str(t) for t in self.changed_tasks],
        }


def _suite(run: Run) -> str:
    suite = run.manifest.get("suite")
    if not isinstance(suite, dict):
        return UNKNOWN
    parts = []
    for name, version in sorted((suite.get("domains") or {}).items()):
        version = version if isinstance(version, dict) else {}
        commit = str(version.get("commit") or "?")[:10]
        files = str(version.get("hash") or "?")[:10]
        parts.append(f"{name}@{commit} files {files}")
    return f"{suite.get('name') or '?'}: {'; '.join(parts) or '?'}"


def _user(run: Run) -> str:
    user = run.manifest.get("user")
    if isinstance(user, dict):
        strategy, models = user.get("strategy"), user.get("models") or [user.get("model")]
    else:
        strategy = run.user_strategy or run.config.get("user_strategy")
        models = run.config.get("user_models") or [run.user_model or run.config.get("user_model")]
        if strategy in ("scripted", "human"):
            models = [None]
    models = [str(m) for m in models if m]
    if not strategy and not models:
        return UNKNOWN
    return " ".join([str(strategy or "?"), *(["+".join(sorted(models))] if models else [])])


def _judge(run: Run) -> str:
    judge = run.manifest.get("judge")
    if isinstance(judge, dict):
        return str(judge.get("model") or "none")
    if "judge_model" in run.config:
        return str(run.config.get("judge_model") or "none")
    return UNKNOWN


def _digests(run: Run) -> dict[TaskId, str]:
    """Each task's definition hash: from its records (any file format), else the manifest."""
    out: dict[TaskId, str] = {}
    for record in run.records:
        if record.task and record.task_id not in out:
            out[record.task_id] = task_digest(record.task)
    return out


def _differs(
    what: str, runs: Sequence[Run], values: list[str], detail: str = ""
) -> Difference | None:
    known = {v for v in values if v != UNKNOWN}
    if len(known) < 2:
        return None
    return Difference(what, {r.label: v for r, v in zip(runs, values, strict=True)}, detail)


def check_runs(runs: Sequence[Run], *, intersect: bool = False) -> ConfoundCheck:
    """What differs between `runs` other than the agent (task ids must already be
    aligned: `compare.align_task_ids`). With `intersect` a different task set is not a
    difference (every number is then computed on the shared tasks)."""
    found: list[Difference] = []
    sets = [r.task_ids for r in runs]
    common = set.intersection(*sets) if sets else set()
    union = set.union(*sets) if sets else set()
    if not intersect and common != union:
        found.append(
            Difference(
                "task set",
                {r.label: f"{len(s)} tasks" for r, s in zip(runs, sets, strict=True)},
                f"{len(common)} shared; not in every run: {ids_text(union - common)} "
                "(--intersect compares on the shared tasks)",
            )
        )
    digests = [_digests(r) for r in runs]
    changed = sorted_ids(t for t in common if len({d[t] for d in digests if t in d}) > 1)
    if changed:
        found.append(
            Difference(
                "task definitions",
                {
                    r.label: f"{sum(1 for t in changed if t in d)} of {len(changed)} differ"
                    for r, d in zip(runs, digests, strict=True)
                },
                f"tasks whose definition differs: {ids_text(set(changed))}",
            )
        )
    for what, values in (
        ("suite version", [_suite(r) for r in runs]),
        ("user simulator", [_user(r) for r in runs]),
        ("judge", [_judge(r) for r in runs]),
    ):
        diff = _differs(what, runs, values)
        if diff is not None:
            found.append(diff)
    return ConfoundCheck(
        differences=found,
        no_manifest=[r.label for r in runs if not r.manifest],
        changed_tasks=changed,
    )


def differences_table(check: ConfoundCheck, runs: Sequence[Run]) -> Any:
    """What differs, one row per difference, one column per run (rich)."""
    from rich.table import Table

    table = Table(title="Runs differ in more than the agent")
    table.add_column("differs in", style="bold")
    for run in runs:
        table.add_column(run.label, overflow="fold")
    table.add_column("detail", overflow="fold")
    for diff in check.differences:
        cells = [diff.values.get(r.label, UNKNOWN) for r in runs]
        table.add_row(diff.what, *cells, diff.detail)
    if check.no_manifest:
        table.add_row(
            "manifest",
            *[NO_MANIFEST if r.label in check.no_manifest else "yes" for r in runs],
            "compared on what the file records (task ids and definitions, user simulator)",
        )
    return table
