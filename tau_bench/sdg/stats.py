"""`tau sdg stats`: the quality report of a generated tasks file (v1 or τ³).

Difficulty consistency (does each task's action count fit the difficulty its provenance
declares), action-type mix (which tools, reads vs writes), duplicates (identical action
sequences; instructions whose word 3-gram Jaccard similarity reaches a threshold), the
validation rate of the runs that wrote the file (from the `.runs.jsonl` sidecar), and
optionally a re-verification by replay: v1, every task still scores 1.0; τ³, the checks
of `targets.tau3_check` (no tool error, 1.0 with NL assertions assumed met, a DB change
when DB is in the reward basis), which make stats the validator of a τ³ task file.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau_bench.sdg.difficulty import Difficulty, difficulty_of
from tau_bench.sdg.output import read_jsonl, runs_path
from tau_bench.sdg.targets import Target, as_target
from tau_bench.sdg.task_view import TaskView, view_of
from tau_bench.task_files import TaskFileError, read_task_records

DEFAULT_SIMILARITY = 0.9
_WORD = re.compile(r"[a-z0-9#_]+")


def provenance(task: Any) -> dict[str, Any]:
    """A task's generation provenance ({} for tasks that have none), either suite."""
    return view_of(task).provenance


def _difficulty(tasks: list[TaskView]) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {}
    inconsistent: list[int] = []
    declared_total = consistent_total = 0
    for i, task in enumerate(tasks):
        declared = str(task.provenance.get("difficulty"))
        count = len(task.actions)
        key = declared if declared in Difficulty.__members__ else "undeclared"
        row = rows.setdefault(key, {"tasks": 0, "consistent": 0, "counts": []})
        row["tasks"] += 1
        row["counts"].append(count)
        if key == "undeclared":
            continue
        declared_total += 1
        if Difficulty(key).accepts(count):
            row["consistent"] += 1
            consistent_total += 1
        else:
            inconsistent.append(i)
    for key, row in rows.items():
        counts = row.pop("counts")
        row.update(min=min(counts), max=max(counts), mean=sum(counts) / len(counts))
        if key == "undeclared":
            row["by_count"] = dict(
                Counter(str(getattr(difficulty_of(c), "value", "none")) for c in counts)
            )
    return {
        "by_difficulty": rows,
        "consistency_rate": consistent_total / declared_total if declared_total else None,
        "inconsistent": inconsistent,
    }


def _mix(tasks: list[TaskView], target: Target | None) -> dict[str, Any]:
    by_tool = Counter(name for t in tasks for name, _ in t.actions)
    total = sum(by_tool.values())
    out: dict[str, Any] = {
        "by_tool": dict(by_tool.most_common()),
        "actions": total,
        "mean_actions": total / len(tasks) if tasks else 0.0,
        "tasks_with_outputs": sum(1 for t in tasks if t.outputs),
    }
    if target is not None:
        writes = sum(n for name, n in by_tool.items() if name in target.writes)
        out.update(
            writes=writes, reads=total - writes, write_share=writes / total if total else 0.0
        )
    return out


def _shingles(text: str) -> frozenset[str]:
    words = _WORD.findall(text.lower())
    if len(words) < 3:
        return frozenset(words)
    return frozenset(" ".join(words[i : i + 3]) for i in range(len(words) - 2))


def near_duplicates(texts: list[str], threshold: float) -> list[tuple[int, int, float]]:
    """Pairs (i, j, similarity) of texts with word 3-gram Jaccard >= threshold."""
    sets = [_shingles(t) for t in texts]
    order = sorted(range(len(texts)), key=lambda i: len(sets[i]))
    pairs = []
    for a, i in enumerate(order):
        si = sets[i]
        for j in order[a + 1 :]:
            sj = sets[j]
            if len(si) < threshold * len(sj):
                break  # sizes only grow from here: Jaccard <= |si| / |sj| < threshold
            union = len(si | sj)
            similarity = len(si & sj) / union if union else 1.0
            if similarity >= threshold:
                pairs.append((min(i, j), max(i, j), round(similarity, 3)))
    return sorted(pairs)


def _duplicates(tasks: list[TaskView], threshold: float) -> dict[str, Any]:
    groups: dict[str, list[int]] = {}
    for i, task in enumerate(tasks):
        calls = [{"name": name, "kwargs": kwargs} for name, kwargs in task.actions]
        key = json.dumps(calls, sort_keys=True)
        groups.setdefault(key, []).append(i)
    identical = [g for g in groups.values() if len(g) > 1]
    near = near_duplicates([t.instruction for t in tasks], threshold)
    involved = {i for g in identical for i in g[1:]} | {j for _, j, _ in near}
    return {
        "identical_actions": identical,
        "near_identical_instructions": [list(p) for p in near],
        "similarity_threshold": threshold,
        "duplicate_tasks": len(involved),
    }


def _validation(runs: list[dict[str, Any]], tasks: list[TaskView]) -> dict[str, Any] | None:
    if not runs:
        return None
    samples = sum(int(r.get("samples", 0)) for r in runs)
    validated = sum(int(r.get("validated", 0)) for r in runs)
    rejected: Counter[str] = Counter()
    for r in runs:
        rejected.update({k: int(v) for k, v in (r.get("rejected") or {}).items()})
    return {
        "runs": len(runs),
        "samples": samples,
        "validated": validated,
        "written": sum(int(r.get("written", 0)) for r in runs),
        "rate": validated / samples if samples else 0.0,
        "rejected": dict(rejected.most_common()),
        "repaired_tasks": sum(1 for t in tasks if t.provenance.get("repaired")),
        "cost": sum(float((r.get("usage") or {}).get("cost", 0.0)) for r in runs),
    }


def compute_stats(
    tasks: list[Any],
    runs: list[dict[str, Any]] | None = None,
    *,
    domain: Any = None,
    similarity: float = DEFAULT_SIMILARITY,
    verify: bool = True,
) -> dict[str, Any]:
    """The quality report as a JSON-ready dict (see the module docstring). `tasks` are
    the suite's tasks (as `domain.load_tasks_file` reads them); `domain` a suite domain,
    a `Target`, or None (no tool kinds, no replay)."""
    target = as_target(domain) if domain is not None else None
    views = [view_of(t) for t in tasks]
    return {
        "tasks": len(tasks),
        "env": target.env if target is not None else None,
        "suite": target.suite if target is not None else None,
        "difficulty": _difficulty(views),
        "action_mix": _mix(views, target),
        "duplicates": _duplicates(views, similarity),
        "validation": _validation(runs or [], views),
        "verification": target.verification(tasks) if verify and target is not None else None,
    }


def load_runs(tasks_file: Path) -> list[dict[str, Any]]:
    return read_jsonl(runs_path(tasks_file))


def env_of(tasks: list[Any]) -> str | None:
    """The env most tasks' provenance names (None if none does)."""
    envs = Counter(str(provenance(t).get("env")) for t in tasks if provenance(t).get("env"))
    return envs.most_common(1)[0][0] if envs else None


@dataclass(frozen=True)
class FileHint:
    """What a tasks file says about itself before its suite is known."""

    env: str | None  # the env most records' provenance names
    tau3_shaped: bool  # records with `evaluation_criteria`: τ³ tasks


def file_hint(path: Path) -> FileHint:
    """Read the file's raw records for its env (a file that does not parse gives no hint:
    the suite's loader says why)."""
    try:
        records = read_task_records(path)
    except TaskFileError:
        return FileHint(None, False)
    dicts = [r for r in records if isinstance(r, dict)]
    envs = Counter(
        str(r["provenance"]["env"])
        for r in dicts
        if isinstance(r.get("provenance"), dict) and r["provenance"].get("env")
    )
    env = envs.most_common(1)[0][0] if envs else None
    return FileHint(env, any("evaluation_criteria" in r for r in dicts))
