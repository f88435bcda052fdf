"""The variance decomposition and the trials-needed arithmetic, on hand-computed data."""

from __future__ import annotations

import pytest

from tau_bench.analysis.variance import decompose, decompose_groups, trials_needed
from tau_bench.records import EpisodeRecord


def rec(model: str, task: int, trial: int, reward: float) -> EpisodeRecord:
    return EpisodeRecord(task_id=task, trial=trial, reward=reward, user_model=model)


def test_parts_add_up_and_match_hand_computation() -> None:
    # model a: task 0 -> 1, 1; task 1 -> 1, 0.  model b: task 0 -> 0, 0; task 1 -> 0, 0.
    records = [rec("a", 0, 0, 1), rec("a", 0, 1, 1), rec("a", 1, 0, 1), rec("a", 1, 1, 0)]
    records += [rec("b", t, k, 0) for t in (0, 1) for k in (0, 1)]
    parts = decompose(records)
    assert parts is not None
    # grand mean 3/8; model means 3/4, 0; task means 1/2, 1/4
    assert parts.total == pytest.approx(3 / 8 * 5 / 8)
    assert parts.between_user_model == pytest.approx(4 * ((3 / 4 - 3 / 8) ** 2 + (3 / 8) ** 2) / 8)
    assert parts.between_task == pytest.approx(4 * ((1 / 8) ** 2 + (1 / 8) ** 2) / 8)
    assert parts.between_trial == pytest.approx(2 * 0.25 / 8)  # only cell (a, 1) varies
    total = sum(getattr(parts, p) for p in ("between_user_model", "between_task", "between_trial"))
    assert total + parts.user_model_x_task == pytest.approx(parts.total)
    # tau eval's grouping gives the same numbers
    grouped = decompose_groups({"a": records[:4], "b": records[4:]})
    assert grouped is not None and grouped["total"] == pytest.approx(parts.total)


def test_errored_episodes_are_left_out_and_nothing_scored_is_none() -> None:
    error = {"source": "user", "kind": "llm_unavailable"}
    assert decompose([EpisodeRecord(task_id=0, trial=0, reward=None, error=error)]) is None


def test_trials_needed() -> None:
    # every task: base always 1, new 1 then 0 -> within-task variance 0.5, diff -0.5 each
    base = {t: [1.0, 1.0] for t in range(10)}
    new = {t: [1.0, 0.0] for t in range(10)}
    need = trials_needed(base, new, half_width=0.1, confidence=0.95)
    assert need is not None and not need.assumed and need.task_var == 0.0
    # z^2 * 0.5 / (k * 10) <= 0.01  ->  k >= 1.96^2 * 5 = 19.2 -> 20
    assert need.trials == 20 and "20 per task" in need.text()
    # spread between tasks that more trials cannot remove
    wide = {t: [1.0, 1.0] if t % 2 else [0.0, 0.0] for t in range(10)}
    stuck = trials_needed(base, wide, half_width=0.1)
    assert stuck is not None and stuck.trials is None and "not reachable" in stuck.text()
