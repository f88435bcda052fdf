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

import heapq
import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau_bench.sdg.difficulty import Difficulty, difficulty_of
from tau_bench.sdg.output import read_jsonl_lines, runs_path
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


MAX_LISTED_PAIRS = 100
"""Near-identical instruction pairs a report lists (the first ones, by task index); the
count of all of them is exact. 5,000 copies of one instruction are 12.5 million pairs."""


MAX_SEARCH_WORK = 1_000_000
"""Candidate visits and checks a near-duplicate search may make (a few seconds). Distinct
texts that are all alike make every pair a candidate: past this the search stops, and
the report says its counts are lower bounds."""


@dataclass(frozen=True)
class NearDuplicates:
    """Instructions with word 3-gram Jaccard similarity >= a threshold."""

    pairs: list[tuple[int, int, float]]  # the first `limit` pairs found (i < j), by (i, j)
    total: int  # how many pairs were found: all of them when `complete`
    duplicates: set[int]  # the texts similar to one with a smaller index (found)
    complete: bool = True  # False: the search stopped at its budget (MAX_SEARCH_WORK)


def find_near_duplicates(
    texts: list[str],
    threshold: float,
    limit: int | None = MAX_LISTED_PAIRS,
    budget: int = MAX_SEARCH_WORK,
) -> NearDuplicates:
    """The near-duplicate pairs of `texts`, at most `limit` of them kept (None: all).

    Texts with the same 3-gram set are one group (similarity 1.0 within it: counted,
    never compared), and distinct sets are paired by `_SimilarSets`, so memory grows
    with the texts and the pairs kept, not with the pairs found; time with the distinct
    texts and their candidate pairs, up to `budget`."""
    if threshold <= 0:  # every pair qualifies
        return _all_pairs(texts, limit)
    groups: dict[frozenset[str], list[int]] = {}
    for i, text in enumerate(texts):
        groups.setdefault(_shingles(text), []).append(i)
    sets = list(groups)
    members = [groups[s] for s in sets]  # ascending indices
    first = [m[0] for m in members]
    earliest = list(first)  # the smallest index similar to each group, itself included
    kept = _FirstPairs(limit)
    total = 0
    for m in members:
        total += len(m) * (len(m) - 1) // 2
        kept.offer_within(m)
    search = _SimilarSets(sets, threshold, budget)
    for g, h, similarity in search:
        total += len(members[g]) * len(members[h])
        earliest[g] = min(earliest[g], first[h])
        earliest[h] = min(earliest[h], first[g])
        kept.offer_across(members[g], members[h], similarity)
    duplicates = {i for m in members for i in m[1:]}
    duplicates |= {first[g] for g in range(len(sets)) if earliest[g] < first[g]}
    return NearDuplicates(kept.sorted(), total, duplicates, search.complete)


def _all_pairs(texts: list[str], limit: int | None) -> NearDuplicates:
    """A threshold of 0: every pair is a near duplicate; only the listed are compared."""
    n = len(texts)
    listed = []
    for i, j in itertools.islice(itertools.combinations(range(n), 2), limit):
        listed.append((i, j, round(_jaccard(_shingles(texts[i]), _shingles(texts[j])), 3)))
    return NearDuplicates(listed, n * (n - 1) // 2, set(range(1, n)))


_EPS = 1e-9  # thresholds below are lowered by this much: float rounding never drops a pair


class _SimilarSets:
    """(g, h, similarity) for the distinct sets with Jaccard >= `threshold` (above 0),
    found without comparing every pair: the prefix and positional filters of PPJoin
    (Xiao et al., "Efficient similarity joins for near duplicate detection", 2008), then
    an exact check of each candidate. With tokens ordered rarest first, two sets this
    similar share a token among the first |x| - ceil(t|x|) + 1 tokens of the larger and
    the first |y| - ceil(2t/(1+t) |y|) + 1 of the smaller (the ones indexed); a candidate
    whose overlap can no longer reach t/(1+t) (|x| + |y|) is dropped. `complete` is False
    when the search stopped at `budget` units of work."""

    def __init__(
        self, sets: list[frozenset[str]], threshold: float, budget: int = MAX_SEARCH_WORK
    ) -> None:
        self.sets = sets
        self.threshold = threshold
        self.budget = budget
        self.complete = True

    def _prefix(self, size: int, share: float) -> int:
        return min(size, size - max(0, math.ceil(share * size - _EPS)) + 1)

    def __iter__(self) -> Iterator[tuple[int, int, float]]:
        t, sets = self.threshold, self.sets
        frequency = Counter(token for s in sets for token in s)
        tokens = [sorted(s, key=lambda w: (frequency[w], w)) for s in sets]
        index: dict[str, list[tuple[int, int]]] = {}
        work = 0
        for x in sorted(range(len(sets)), key=lambda g: len(sets[g])):
            size = len(tokens[x])
            indexed = self._prefix(size, 2 * t / (1 + t))
            overlap: dict[int, int] = {}
            for i, token in enumerate(tokens[x][: self._prefix(size, t)]):
                postings = index.get(token, [])
                work += len(postings)
                for y, j in postings:
                    seen = overlap.get(y, 0)
                    if seen < 0:
                        continue  # ruled out
                    other = len(tokens[y])
                    needed = math.ceil(t / (1 + t) * (size + other) - _EPS)
                    if other >= t * size - _EPS and seen + min(size - i, other - j) >= needed:
                        overlap[y] = seen + 1
                    else:
                        overlap[y] = -1
                if i < indexed:
                    index.setdefault(token, []).append((x, i))
            for y, seen in overlap.items():
                if seen > 0:
                    work += 1
                    similarity = _jaccard(sets[x], sets[y])
                    if similarity >= t:
                        yield min(x, y), max(x, y), round(similarity, 3)
            if work > self.budget:
                self.complete = False
                return


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 1.0


class _FirstPairs:
    """The `limit` smallest pairs (i, j) offered, in a max-heap (None: keep every pair)."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self._heap: list[tuple[int, int, float]] = []  # (-i, -j, similarity)

    def _full_below(self, i: int, j: int) -> bool:
        """Whether the heap is full of pairs smaller than (i, j): nothing to keep."""
        if self.limit is None or len(self._heap) < self.limit:
            return False
        if not self._heap:
            return True  # a limit of 0
        top = self._heap[0]
        return (i, j) >= (-top[0], -top[1])

    def _offer(self, i: int, j: int, similarity: float) -> bool:
        if self._full_below(i, j):
            return False
        item = (-i, -j, similarity)
        if self.limit is not None and len(self._heap) >= self.limit:
            heapq.heapreplace(self._heap, item)
        else:
            heapq.heappush(self._heap, item)
        return True

    def offer_within(self, members: list[int]) -> None:
        """Every pair of a group of equal texts (ascending): rows stop at the first pair
        not kept, and so does the whole group once a row's first pair is not kept."""
        for x, i in enumerate(members):
            for j in members[x + 1 :]:
                if not self._offer(i, j, 1.0):
                    if j == members[x + 1]:
                        return
                    break

    def offer_across(self, left: list[int], right: list[int], similarity: float) -> None:
        """Every pair of one member of `left` and one of `right` (both ascending)."""
        for i in left:  # a row's pairs grow with j, and its first pair grows with i
            for j in right:
                if not self._offer(min(i, j), max(i, j), similarity):
                    if j == right[0]:
                        return
                    break

    def sorted(self) -> list[tuple[int, int, float]]:
        return sorted((-i, -j, s) for i, j, s in self._heap)


def near_duplicates(
    texts: list[str], threshold: float, limit: int | None = None
) -> list[tuple[int, int, float]]:
    """Pairs (i, j, similarity) of texts with word 3-gram Jaccard >= threshold, by (i, j);
    the first `limit` of them (None: all)."""
    return find_near_duplicates(texts, threshold, limit).pairs


def _duplicates(tasks: list[TaskView], threshold: float) -> dict[str, Any]:
    groups: dict[str, list[int]] = {}
    for i, task in enumerate(tasks):
        calls = [{"name": name, "kwargs": kwargs} for name, kwargs in task.actions]
        key = json.dumps(calls, sort_keys=True)
        groups.setdefault(key, []).append(i)
    identical = [g for g in groups.values() if len(g) > 1]
    near = find_near_duplicates([t.instruction for t in tasks], threshold)
    involved = {i for g in identical for i in g[1:]} | near.duplicates
    return {
        "identical_actions": identical,
        "near_identical_instructions": [list(p) for p in near.pairs],
        "near_identical_pairs": near.total,
        "near_identical_unlisted": near.total - len(near.pairs),
        "near_identical_complete": near.complete,
        "similarity_threshold": threshold,
        "duplicate_tasks": len(involved),
    }


_MAX_RUN_NUMBER = 1e12
"""Larger counts or costs in a runs line are not a run's (and would overflow the totals)."""


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(value)
    if not 0 <= value <= _MAX_RUN_NUMBER:  # also NaN
        raise ValueError(value)
    return float(value)


def _count(value: Any) -> int:
    """A count of a runs line: a non-negative integer (an integral float too)."""
    number = _number(value)
    if not number.is_integer():
        raise ValueError(value)
    return int(number)


def _run_counts(run: Any) -> dict[str, Any]:
    """One runs line read strictly (ValueError when it or a field has the wrong shape)."""
    if not isinstance(run, dict):
        raise ValueError(run)
    rejected = run.get("rejected") or {}
    usage = run.get("usage") or {}
    if not isinstance(rejected, dict) or not isinstance(usage, dict):
        raise ValueError(run)
    return {
        "samples": _count(run.get("samples", 0)),
        "validated": _count(run.get("validated", 0)),
        "written": _count(run.get("written", 0)),
        "rejected": {str(k): _count(v) for k, v in rejected.items()},
        "cost": _number(usage.get("cost", 0.0)),
    }


def _validation(runs: list[Any], tasks: list[TaskView]) -> dict[str, Any] | None:
    """The runs sidecar's totals; a line that is not a JSON object, or has a field of the
    wrong shape (edited by hand, written by something else, cut off by a full disk), is
    left out and counted as `malformed_runs`."""
    if not runs:
        return None
    good = []
    for run in runs:
        try:
            good.append(_run_counts(run))
        except ValueError:
            continue
    samples = sum(r["samples"] for r in good)
    validated = sum(r["validated"] for r in good)
    rejected: Counter[str] = Counter()
    for r in good:
        rejected.update(r["rejected"])
    return {
        "runs": len(good),
        "malformed_runs": len(runs) - len(good),
        "samples": samples,
        "validated": validated,
        "written": sum(r["written"] for r in good),
        "rate": validated / samples if samples else 0.0,
        "rejected": dict(rejected.most_common()),
        "repaired_tasks": sum(1 for t in tasks if t.provenance.get("repaired")),
        "cost": sum((r["cost"] for r in good), 0.0),
    }


def compute_stats(
    tasks: list[Any],
    runs: list[Any] | None = None,
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


def load_runs(tasks_file: Path) -> list[Any]:
    """The lines of the tasks file's runs sidecar (a line that is not JSON is None: the
    report counts it as malformed)."""
    return read_jsonl_lines(runs_path(tasks_file))


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
