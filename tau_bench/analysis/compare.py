"""Compare runs: one row of metrics per run, a per-task matrix, paired differences.

Runs are only comparable on the same tasks of the same domain: `compare_runs` refuses
different task sets unless asked to keep the shared tasks (`intersect`), and refuses
different domains always. Every metric is then computed on the compared tasks only, so
the table and the paired intervals describe the same episodes.

Multi-domain runs name tasks `"retail/12"`; next to one, a single-domain run's indices
are named by its domain (`12` -> `"airline/12"`), so an airline run lines up with the
airline half of a two-domain run (`intersect`). `by_user_model` makes each (run, user
model) of a rotation run a row of its own, on the tasks the runs share.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from tau_bench.analysis.bootstrap import paired_bootstrap
from tau_bench.analysis.loading import Run, split_by_user_model, with_domain_ids
from tau_bench.config.eval_config import default_ks
from tau_bench.metrics import pass_hat_k, success_counts, summarize, user_model_of
from tau_bench.records import EpisodeRecord, is_success
from tau_bench.task_ids import TaskId, ids_text, sort_key, sorted_ids


class ComparisonError(ValueError):
    """Runs that cannot be compared as given; the message says why and what to do."""


class UnknownBaseline(ComparisonError):
    """The baseline asked for is none of the compared runs (the message lists them)."""


@dataclass
class RunRow:
    """One run's line in the comparison table (on the compared tasks only)."""

    index: int
    label: str
    agent: str
    user: str | None
    user_models: dict[str, int]  # episodes per user model (several in a rotation run)
    env: str | None
    path: str
    source_format: str
    tasks: int
    trials: int
    episodes: int
    scored: int
    errors: int
    avg_reward: float | None
    pass_hat_k: dict[int, float | None]
    cost_agent: float
    cost_user: float
    latency_p50: float | None
    latency_p95: float | None
    episode_p50: float | None
    # Errored episodes per class (tau_bench.error_classes) and the average reward with
    # unavailable episodes counted as failures (the second convention).
    error_classes: dict[str, int] = field(default_factory=dict)
    avg_reward_unavailable_failed: float | None = None
    costs: dict[str, Any] = field(default_factory=dict)  # tau_bench.cost.totals
    # Lines of the run's log that were not JSON, so not counted (a killed or corrupt run).
    unreadable_lines: int = 0

    @property
    def shown_label(self) -> str:
        """The label as tables show it: marked when lines of its log were left out."""
        if not self.unreadable_lines:
            return self.label
        return f"{self.label} [{self.unreadable_lines} unreadable line(s) skipped]"

    @property
    def cost_total(self) -> float | None:
        """The run's total cost as its tables show it: the cost records' total (agent,
        user, judge, platform; None when a part is unknown, e.g. the agent's cost of a
        τ-bench results file), else agent + user. None (unknown) when the sum is not a
        finite number (usage costs near 1e308 add up to infinity: no cost anyone paid)."""
        if self.costs:
            return _known(self.costs.get("total"))
        return _known(self.cost_agent + self.cost_user)

    def cost_part(self, part: str) -> float | None:
        """The agent's or the user's cost, from the cost records when the run has them
        (so `--json` says what the tables say), else from the usage."""
        if self.costs:
            return _known(self.costs.get(part))
        return _known(self.cost_agent if part == "agent" else self.cost_user)

    @property
    def cost_per_episode(self) -> float | None:
        total = self.cost_total
        return total / self.episodes if total is not None and self.episodes else None


def _known(value: Any) -> float | None:
    """A cost as a finite number, or None (unknown)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _finite(costs: dict[str, Any]) -> dict[str, Any]:
    """`tau_bench.cost.totals` with a sum that overflowed (not finite) as unknown (None),
    as every other unknown cost is shown and written."""
    return {
        k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in costs.items()
    }


@dataclass
class Cell:
    """How one run did on one task: successes out of scored trials, plus errors."""

    successes: int = 0
    scored: int = 0
    errors: int = 0
    reward_sum: float = 0.0

    @property
    def mean_reward(self) -> float | None:
        return self.reward_sum / self.scored if self.scored else None

    @property
    def rate(self) -> float | None:
        return self.successes / self.scored if self.scored else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "successes": self.successes,
            "scored": self.scored,
            "errors": self.errors,
            "mean_reward": self.mean_reward,
        }


@dataclass
class Paired:
    """`other` minus `baseline`: mean per-task reward difference with its CI."""

    baseline: str
    other: str
    tasks: int
    mean_baseline: float
    mean_other: float
    diff: float
    low: float
    high: float
    confidence: float
    resamples: int
    seed: int
    other_better: int
    baseline_better: int
    ties: int
    unpaired_tasks: int = 0

    @property
    def significant(self) -> bool:
        return self.low > 0 or self.high < 0

    @property
    def verdict(self) -> str:
        if not self.significant:
            return "no clear difference"
        return f"{self.other} better" if self.diff > 0 else f"{self.baseline} better"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "significant": self.significant, "verdict": self.verdict}


ALL_KS_UP_TO = 8


def pass_ks(max_k: int) -> list[int]:
    """The k of pass^k a comparison shows for runs of up to `max_k` trials."""
    return list(range(1, max_k + 1)) if max_k <= ALL_KS_UP_TO else default_ks(max_k)


@dataclass
class Comparison:
    rows: list[RunRow]
    task_ids: list[TaskId]
    matrix: dict[str, dict[TaskId, Cell]]
    paired: list[Paired]
    max_k: int
    intersect: bool = False
    dropped: dict[str, list[TaskId]] = field(default_factory=dict)
    # The runs as compared, one per row: split by user model, ids named by domain.
    runs: list[Run] = field(default_factory=list)
    by_user_model: bool = False
    # `tau_bench.analysis.confounds.ConfoundCheck.to_dict()` when the CLI checked the runs.
    confounds: dict[str, Any] = field(default_factory=dict)

    @property
    def ks(self) -> list[int]:
        """The k of the pass^k shown: every k up to `ALL_KS_UP_TO` trials, else 1, 2, 4, ...
        and the most trials (as `tau eval`), so 10,000 trials make 15 columns."""
        return pass_ks(self.max_k)

    def to_dict(self) -> dict[str, Any]:
        """The `--json` output: plain data, keys as strings."""
        rows = []
        for row in self.rows:
            data = asdict(row)
            data["pass_hat_k"] = {str(k): v for k, v in row.pass_hat_k.items()}
            for part in ("agent", "user"):  # as the tables: unknown is None, never Infinity
                data[f"cost_{part}"] = row.cost_part(part)
            data["cost_total"] = row.cost_total
            data["cost_per_episode"] = row.cost_per_episode
            rows.append(data)
        warning = self.confounds.get("warning")
        return {
            **({"warning": warning} if warning else {}),
            **({"confounds": self.confounds} if self.confounds else {}),
            "runs": rows,
            "tasks": self.task_ids,
            "intersect": self.intersect,
            "by_user_model": self.by_user_model,
            "dropped_tasks": self.dropped,
            "matrix": {
                label: {str(t): cell.to_dict() for t, cell in cells.items()}
                for label, cells in self.matrix.items()
            },
            "paired": [p.to_dict() for p in self.paired],
        }


def align_task_ids(runs: Sequence[Run]) -> list[Run]:
    """The runs with comparable task ids: if any names its tasks by domain
    (`retail/12`), the others' plain indices are named by their domain too."""
    if not any(r.namespaced for r in runs):
        return list(runs)
    try:
        return [with_domain_ids(r) for r in runs]
    except ValueError as exc:
        raise ComparisonError(f"{exc}: it cannot be compared with multi-domain runs") from None


def shared_tasks(runs: Sequence[Run], intersect: bool) -> list[TaskId]:
    """The task ids to compare on, or a ComparisonError saying why there are none.

    Plain indices of different domains are different tasks with the same ids, so runs
    on different domains are refused; ids that name their domain are compared as they
    are (a domain only one run has is a task-set difference)."""
    if not runs:
        raise ComparisonError("no runs to compare")
    envs = {r.env for r in runs if r.env}
    if len(envs) > 1 and not all(r.namespaced for r in runs if r.records):
        where = ", ".join(f"{r.label}: {r.env or '?'}" for r in runs)
        raise ComparisonError(f"runs are on different domains ({where})")
    sets = [r.task_ids for r in runs]
    common = set.intersection(*sets)
    union = set.union(*sets)
    if not union:
        raise ComparisonError("the runs have no episodes")
    if common == union:
        return sorted_ids(common)
    if not intersect:
        counts = ", ".join(f"{r.label}: {len(s)}" for r, s in zip(runs, sets, strict=True))
        raise ComparisonError(
            f"runs cover different tasks ({counts}; {len(common)} shared; not in every run: "
            f"{ids_text(union - common)}); pass --intersect to compare on the shared tasks"
        )
    if not common:
        raise ComparisonError("the runs share no task: nothing to compare")
    return sorted_ids(common)


def _row(index: int, run: Run, records: list[EpisodeRecord], max_k: int) -> RunRow:
    summary = summarize(records, run.num_trials)
    counts = success_counts(records)
    latency = summary["latency"]
    return RunRow(
        index=index,
        label=run.label,
        agent=run.agent,
        user=run.user,
        user_models=_user_mix(records, run.config.get("user_models") or []),
        env=run.env,
        path=str(run.path),
        source_format=run.source_format,
        tasks=summary["tasks"],
        trials=run.num_trials,
        episodes=summary["episodes_done"],
        scored=summary["episodes_scored"],
        errors=summary["errors"],
        avg_reward=summary["avg_reward"],
        pass_hat_k={
            k: pass_hat_k(counts, k) if k <= run.num_trials else None for k in pass_ks(max_k)
        },
        cost_agent=summary["cost"]["agent"],
        cost_user=summary["cost"]["user"],
        latency_p50=latency["agent_turn"]["p50"],
        latency_p95=latency["agent_turn"]["p95"],
        episode_p50=latency["episode"]["p50"],
        error_classes=summary["error_classes"],
        avg_reward_unavailable_failed=summary["unavailable_as_failures"]["avg_reward"],
        costs=_finite(summary["costs"]),
        unreadable_lines=run.bad_lines,
    )


def _user_mix(records: Iterable[EpisodeRecord], order: Sequence[str]) -> dict[str, int]:
    """Episodes per user model, in the rotation's `order`, then in order of appearance."""
    counts: dict[str, int] = dict.fromkeys((str(m) for m in order), 0)
    for r in records:
        name = user_model_of(r)
        counts[name] = counts.get(name, 0) + 1
    return {name: n for name, n in counts.items() if n}


def task_cells(records: Iterable[EpisodeRecord]) -> dict[TaskId, Cell]:
    cells: dict[TaskId, Cell] = {}
    for r in records:
        cell = cells.setdefault(r.task_id, Cell())
        if r.is_error:
            cell.errors += 1
            continue
        cell.scored += 1
        cell.reward_sum += r.reward or 0.0
        cell.successes += 1 if is_success(r.reward) else 0
    return cells


def paired(
    baseline: str,
    other: str,
    a: dict[TaskId, Cell],
    b: dict[TaskId, Cell],
    tasks: Sequence[TaskId],
    *,
    resamples: int,
    confidence: float,
    seed: int,
) -> Paired | None:
    """Per-task mean reward of `other` minus `baseline`; None if no task has both."""
    pairs: list[tuple[float, float]] = []
    for t in tasks:
        ra, rb = a.get(t, Cell()).mean_reward, b.get(t, Cell()).mean_reward
        if ra is not None and rb is not None:
            pairs.append((ra, rb))
    if not pairs:
        return None
    diffs = [y - x for x, y in pairs]
    ci = paired_bootstrap(diffs, resamples=resamples, confidence=confidence, seed=seed)
    eps = 1e-9
    return Paired(
        baseline=baseline,
        other=other,
        tasks=len(pairs),
        mean_baseline=sum(x for x, _ in pairs) / len(pairs),
        mean_other=sum(y for _, y in pairs) / len(pairs),
        diff=ci.estimate,
        low=ci.low,
        high=ci.high,
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        other_better=sum(1 for d in diffs if d > eps),
        baseline_better=sum(1 for d in diffs if d < -eps),
        ties=sum(1 for d in diffs if abs(d) <= eps),
        unpaired_tasks=len(tasks) - len(pairs),
    )


def _unique_labels(runs: list[Run]) -> list[Run]:
    """Rows are keyed by label: a repeated one gets `#2`, `#3`... (on a copy)."""
    seen: dict[str, int] = {}
    out = []
    for run in runs:
        n = seen[run.label] = seen.get(run.label, 0) + 1
        out.append(run if n == 1 else replace(run, label=f"{run.label}#{n}"))
    return out


def _baseline(baseline: int | str, runs: Sequence[Run]) -> int:
    """`baseline` as an index into `runs`: an index, or a `#` (from 1) or label as text."""
    if isinstance(baseline, int):
        if 0 <= baseline < len(runs):
            return baseline
        raise UnknownBaseline(f"baseline {baseline + 1} is not one of the {len(runs)} runs")
    for i, run in enumerate(runs):
        if baseline in (run.label, str(i + 1)):
            return i
    labels = ", ".join(f"{i + 1}={r.label}" for i, r in enumerate(runs))
    raise UnknownBaseline(f"baseline {baseline!r} is not one of the runs ({labels})")


def compare_runs(
    runs: Sequence[Run],
    *,
    intersect: bool = False,
    baseline: int | str = 0,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    by_user_model: bool = False,
) -> Comparison:
    """The comparison of `runs`; each other run is paired against the baseline (an
    index into the compared runs, or a `#`/label as text).

    With `by_user_model` each (run, user model) of a rotation run is compared as a run
    of its own (`<label> [<model>]`), on the tasks the whole runs share; a pair of
    them is then paired on the tasks both have."""
    aligned = align_task_ids(runs)
    tasks = shared_tasks(aligned, intersect)
    if by_user_model:
        aligned = [part for run in aligned for part in split_by_user_model(run)]
    compared = _unique_labels(aligned)
    base_index = _baseline(baseline, compared)
    keep = set(tasks)
    max_k = max(r.num_trials for r in compared)
    rows: list[RunRow] = []
    matrix: dict[str, dict[TaskId, Cell]] = {}
    dropped: dict[str, list[TaskId]] = {}
    for i, run in enumerate(compared):
        records = [r for r in run.records if r.task_id in keep]
        extra = sorted_ids(run.task_ids - keep)
        if extra:
            dropped[run.label] = extra
        rows.append(_row(i + 1, run, records, max_k))
        matrix[run.label] = dict(
            sorted(task_cells(records).items(), key=lambda kv: sort_key(kv[0]))
        )
    base = compared[base_index].label
    pairs = [
        p
        for run in compared
        if run.label != base
        for p in [
            paired(
                base,
                run.label,
                matrix[base],
                matrix[run.label],
                tasks,
                resamples=resamples,
                confidence=confidence,
                seed=seed,
            )
        ]
        if p is not None
    ]
    return Comparison(
        rows=rows,
        task_ids=tasks,
        matrix=matrix,
        paired=pairs,
        max_k=max_k,
        intersect=intersect,
        dropped=dropped,
        runs=compared,
        by_user_model=by_user_model,
    )
