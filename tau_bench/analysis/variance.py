"""Where the spread of rewards comes from, and how many trials a decision needs.

`decompose` splits the variance of the scored episodes' rewards (over every episode,
1/N) into sums of squares, each divided by N, so the parts add up to the total:

* between user models - how far each user model's mean is from the grand mean;
* between tasks - how far each task's mean is from the grand mean (tasks are hard or
  easy for every agent: the reason comparisons pair by task);
* between trials - the spread of repeated trials of one (user model, task): the noise
  that more trials average out;
* user model × task - what remains (one user model finding a task harder than
  another does); with unbalanced data it can be slightly negative.

`trials_needed` answers a bot team's CI question: with this task set and the observed
variance, how many trials per task make the paired interval's half-width at most D.
`tau compare --by-user-model` and `tau eval` both print `decompose`'s table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

from tau_bench.metrics import user_model_of
from tau_bench.records import EpisodeRecord

PARTS = ("between_user_model", "between_task", "between_trial", "user_model_x_task")
PART_LABELS = {
    "between_user_model": "between user models",
    "between_task": "between tasks",
    "between_trial": "between trials",
    "user_model_x_task": "user model × task",
}


@dataclass(frozen=True)
class VarianceParts:
    """Population variance of reward (1/N) and its parts (see the module docstring)."""

    episodes: int
    user_models: int
    tasks: int
    mean: float
    total: float
    between_user_model: float
    between_task: float
    between_trial: float
    user_model_x_task: float

    def share(self, part: str) -> float | None:
        return None if self.total <= 0 else float(getattr(self, part)) / self.total

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "shares": {p: self.share(p) for p in PARTS}}


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _ss_between(groups: Mapping[Any, list[float]], grand: float) -> float:
    return sum(len(v) * (_mean(v) - grand) ** 2 for v in groups.values())


def decompose(
    records: Iterable[EpisodeRecord],
    user_model: Callable[[EpisodeRecord], str] = user_model_of,
) -> VarianceParts | None:
    """The decomposition of the scored records' rewards; None when nothing is scored."""
    cells: dict[tuple[str, Any], list[float]] = {}
    for r in records:
        if not r.is_error:
            cells.setdefault((user_model(r), r.task_id), []).append(float(r.reward or 0.0))
    values = [v for vs in cells.values() for v in vs]
    if not values:
        return None
    n, grand = len(values), _mean(values)
    by_model: dict[str, list[float]] = {}
    by_task: dict[Any, list[float]] = {}
    for (model, task), vs in cells.items():
        by_model.setdefault(model, []).extend(vs)
        by_task.setdefault(task, []).extend(vs)
    total = sum((v - grand) ** 2 for v in values)
    models = _ss_between(by_model, grand)
    tasks = _ss_between(by_task, grand)
    trials = sum((v - _mean(vs)) ** 2 for vs in cells.values() for v in vs)
    return VarianceParts(
        episodes=n,
        user_models=len(by_model),
        tasks=len(by_task),
        mean=grand,
        total=total / n,
        between_user_model=models / n,
        between_task=tasks / n,
        between_trial=trials / n,
        user_model_x_task=(total - models - tasks - trials) / n,
    )


def variance_table(rows: Mapping[str, VarianceParts | None], title: str = "") -> Any:
    """One row per run (or per eval): each part as variance and share of the total."""
    from rich.table import Table

    table = Table(title=title or "Variance of reward by source (share of total)")
    table.add_column("run", overflow="fold")
    for name in ("episodes", "user models", "tasks", "mean", "total var"):
        table.add_column(name, justify="right")
    for part in PARTS:
        table.add_column(PART_LABELS[part], justify="right")
    for label, parts in rows.items():
        if parts is None:
            table.add_row(label, "0", *["-"] * (4 + len(PARTS)))
            continue
        cells = []
        for part in PARTS:
            share = parts.share(part)
            value = float(getattr(parts, part))
            cells.append(f"{value:.4f} ({'-' if share is None else f'{share:.0%}'})")
        table.add_row(
            label,
            str(parts.episodes),
            str(parts.user_models),
            str(parts.tasks),
            f"{parts.mean:.3f}",
            f"{parts.total:.4f}",
            *cells,
        )
    return table


# -- how many trials ---------------------------------------------------------------------


@dataclass(frozen=True)
class TrialsNeeded:
    """Trials per task for a paired CI half-width of `half_width` on `tasks` tasks.

    `trials` is None when more trials cannot get there (the task-to-task spread of the
    difference alone is too wide): `tasks_needed` then says how many tasks would,
    at the observed trials."""

    half_width: float
    confidence: float
    tasks: int
    observed_trials: float
    within_task_var: float
    task_var: float
    trials: int | None
    tasks_needed: int | None
    assumed: bool  # one trial per task: all the spread was taken as trial noise

    def text(self) -> str:
        head = (
            f"for a {self.confidence:.0%} CI half-width of {self.half_width:g} on "
            f"{self.tasks} tasks at the observed variance"
        )
        note = " (one trial per task: all variance taken as trial noise)" if self.assumed else ""
        if self.trials is not None:
            return (
                f"trials needed {head}: {self.trials} per task "
                f"(observed {self.observed_trials:g}){note}"
            )
        return (
            f"trials needed {head}: not reachable by more trials, the tasks' own spread is "
            f"too wide; about {self.tasks_needed} tasks would be needed{note}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "text": self.text()}


def _var(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    m = _mean(values)
    return sum((v - m) ** 2 for v in values) / (len(values) - 1)


def trials_needed(
    base: Mapping[Any, Sequence[float]],
    new: Mapping[Any, Sequence[float]],
    *,
    half_width: float,
    confidence: float = 0.95,
) -> TrialsNeeded | None:
    """From per-task rewards of two runs on the same tasks (None if none shared).

    With d_t the per-task difference of mean rewards over k trials,
    Var(d_t) = s_task + s_trial / k, where s_trial is the within-task variance of both
    runs added; the mean over T tasks has a normal-approximation half-width
    z * sqrt(Var(d_t) / T). Solving for k gives the trials needed. None too for a
    half-width that is not a positive finite number (no number of trials reaches it)."""
    tasks = [t for t in base if t in new and base[t] and new[t]]
    if not tasks or not (math.isfinite(half_width) and half_width > 0):
        return None
    diffs = [_mean(new[t]) - _mean(base[t]) for t in tasks]
    k_obs = _mean([min(len(base[t]), len(new[t])) for t in tasks])
    within = [
        (_var(base[t]) or 0.0) + (_var(new[t]) or 0.0)
        for t in tasks
        if len(base[t]) > 1 or len(new[t]) > 1
    ]
    var_d = _var(diffs) or 0.0
    assumed = not within
    s_trial = var_d * k_obs if assumed else _mean(within)
    s_task = 0.0 if assumed else max(0.0, var_d - s_trial / k_obs)
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    budget = len(tasks) * (half_width / z) ** 2  # the largest Var(d_t) that is enough
    trials: int | None
    if s_task >= budget:
        trials = None
    else:
        trials = max(1, math.ceil(s_trial / (budget - s_task))) if s_trial > 0 else 1
    tasks_needed = math.ceil((z / half_width) ** 2 * (s_task + s_trial / k_obs)) or 1
    return TrialsNeeded(
        half_width=half_width,
        confidence=confidence,
        tasks=len(tasks),
        observed_trials=round(k_obs, 2),
        within_task_var=s_trial,
        task_var=s_task,
        trials=trials,
        tasks_needed=tasks_needed,
        assumed=assumed,
    )


def rewards_by_task(records: Iterable[EpisodeRecord]) -> dict[Any, list[float]]:
    """Scored rewards per task."""
    out: dict[Any, list[float]] = {}
    for r in records:
        if not r.is_error:
            out.setdefault(r.task_id, []).append(float(r.reward or 0.0))
    return out


def decompose_groups(groups: Mapping[str, Sequence[EpisodeRecord]]) -> dict[str, Any] | None:
    """`decompose` of an eval's episodes, grouped by user model (`tau eval`), as JSON."""
    key = {id(r): model for model, records in groups.items() for r in records}
    parts = decompose((r for records in groups.values() for r in records), lambda r: key[id(r)])
    return parts.to_dict() if parts is not None else None


def parts_from_dict(data: Mapping[str, Any] | None) -> VarianceParts | None:
    """A `VarianceParts.to_dict()` read back (an eval report)."""
    if not data:
        return None
    names = VarianceParts.__dataclass_fields__
    return VarianceParts(**{k: v for k, v in data.items() if k in names})
