"""pass^k, percentiles and the summary, against hand computations."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tau_bench.metrics import pass_hat_k, pass_hat_ks, percentile, success_counts, summarize
from tau_bench.records import EpisodeRecord


def rec(task: int, trial: int, reward: float | None, **kw) -> EpisodeRecord:
    error = {"kind": "adapter_error", "message": "down"} if reward is None else None
    return EpisodeRecord(task_id=task, trial=trial, reward=reward, error=error, **kw)


def test_pass_hat_k_hand_computed():
    # task a: 2 of 4, task b: 4 of 4, task c: 0 of 4
    counts = {"a": (2, 4), "b": (4, 4), "c": (0, 4)}
    assert pass_hat_k(counts, 1) == pytest.approx((0.5 + 1 + 0) / 3)
    # C(2,2)/C(4,2) = 1/6
    assert pass_hat_k(counts, 2) == pytest.approx((1 / 6 + 1 + 0) / 3)
    assert pass_hat_k(counts, 3) == pytest.approx(1 / 3)
    assert pass_hat_k(counts, 4) == pytest.approx(1 / 3)


def test_pass_hat_k_three_of_five():
    # C(3,2)/C(5,2) = 3/10 ; C(3,3)/C(5,3) = 1/10 ; k=4: C(3,4)=0
    counts = {0: (3, 5)}
    assert pass_hat_k(counts, 2) == pytest.approx(0.3)
    assert pass_hat_k(counts, 3) == pytest.approx(0.1)
    assert pass_hat_k(counts, 4) == 0.0


def test_errored_trials_are_not_scored():
    records = [
        rec(0, 0, 1.0),
        rec(0, 1, None),  # infrastructure error: not a failure
        rec(0, 2, 1.0),
        rec(1, 0, 0.0),
        rec(1, 1, 1.0),
        rec(1, 2, 1.0),
    ]
    assert success_counts(records) == {0: (2, 2), 1: (2, 3)}
    ks = pass_hat_ks(records, 3)
    assert ks[1] == pytest.approx((1.0 + 2 / 3) / 2)
    assert ks[2] == pytest.approx((1.0 + 1 / 3) / 2)
    # only task 1 has three scored trials: C(2,3) = 0
    assert ks[3] == 0.0


def test_pass_hat_k_none_when_no_task_has_k_trials():
    assert pass_hat_k({0: (1, 1)}, 2) is None
    with pytest.raises(ValueError):
        pass_hat_k({0: (1, 1)}, 0)


def test_success_tolerance():
    records = [rec(0, 0, 1.0 - 1e-9), rec(1, 0, 0.999)]
    assert success_counts(records) == {0: (1, 1), 1: (0, 1)}


@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.integers(1, 6)).map(lambda t: (min(t[0], t[1]), t[1])),
        min_size=1,
        max_size=8,
    )
)
def test_pass_hat_k_properties(pairs):
    counts = dict(enumerate(pairs))
    n_max = max(n for _, n in pairs)
    # pass^1 is the plain success rate per task, averaged
    assert pass_hat_k(counts, 1) == pytest.approx(sum(c / n for c, n in pairs) / len(pairs))
    values = [
        pass_hat_k({t: cn for t, cn in counts.items() if cn[1] >= n_max}, k)
        for k in range(1, n_max + 1)
    ]
    for a, b in itertools.pairwise(values):
        assert a is not None and b is not None
        assert b <= a + 1e-12  # never increases with k on a fixed task set
    for k in range(1, n_max + 1):
        v = pass_hat_k(counts, k)
        assert v is not None and 0.0 <= v <= 1.0


def test_percentile_linear_interpolation():
    assert percentile([], 50) is None
    assert percentile([3.0], 95) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    # numpy.percentile([1..10], 95) == 9.55
    assert percentile([float(i) for i in range(10, 0, -1)], 95) == pytest.approx(9.55)


def test_summary_counts_costs_and_latency():
    turns = [{"role": "agent", "latency": 0.1}, {"role": "user", "latency": 5.0}]
    records = [
        rec(
            0,
            0,
            1.0,
            agent_usage={"cost": 0.5, "prompt_tokens": 10, "completion_tokens": 2, "calls": 1},
            user_usage={"cost": 0.25, "prompt_tokens": 4, "completion_tokens": 1, "calls": 1},
            turns=turns,
            duration=2.0,
            stop_reason="user_stop",
        ),
        rec(
            1,
            0,
            0.0,
            agent_usage={"cost": 0.5},
            turns=[{"role": "agent", "latency": 0.3}],
            duration=4.0,
            stop_reason="max_steps",
        ),
        rec(2, 0, None, agent_usage={"cost": 1.0}, duration=9.0, stop_reason="error"),
    ]
    s = summarize(records, num_trials=1, planned=4)
    assert s["episodes_planned"] == 4 and s["episodes_done"] == 3 and s["episodes_missing"] == 1
    assert s["episodes_scored"] == 2 and s["errors"] == 1
    assert s["error_kinds"] == {"adapter_error": 1}
    assert s["avg_reward"] == pytest.approx(0.5)  # the errored episode is left out
    assert s["pass_hat_k"] == {"1": pytest.approx(0.5)}
    assert s["cost"]["agent"] == pytest.approx(2.0)  # errored episodes still cost money
    assert s["cost"]["user"] == pytest.approx(0.25)
    assert s["cost"]["total"] == pytest.approx(2.25)
    assert s["tokens"]["agent"]["prompt_tokens"] == 10
    assert s["latency"]["agent_turn"]["n"] == 2
    assert s["latency"]["agent_turn"]["p50"] == pytest.approx(0.2)
    assert s["latency"]["episode"]["p50"] == pytest.approx(3.0)
    assert s["latency"]["episode"]["p95"] == pytest.approx(2.0 + 0.95 * 2.0)
    assert s["stop_reasons"] == {"user_stop": 1, "max_steps": 1, "error": 1}
    assert not math.isnan(s["avg_reward"])


def test_summary_of_nothing():
    s = summarize([], num_trials=2, planned=0)
    assert s["avg_reward"] is None
    assert s["pass_hat_k"] == {"1": None, "2": None}


def test_summary_groups_by_user_model_and_domain():
    from tau_bench.metrics import group_metrics, user_model_of

    def r(task: Any, trial: int, reward: float | None, user: str | None, domain: str = "") -> Any:
        error = {"kind": "x"} if reward is None else None
        return EpisodeRecord(
            task_id=task,
            trial=trial,
            reward=reward,
            user_model=user,
            user_strategy="llm" if user else "scripted",
            domain=domain,
            error=error,
        )

    records = [
        r("retail/1", 0, 1.0, "m1", "retail"),
        r("retail/1", 1, 0.0, "m2", "retail"),
        r("airline/1", 0, 1.0, "m1", "airline"),
        r("airline/1", 1, None, "m2", "airline"),
    ]
    summary = summarize(records, num_trials=2)
    m1, m2 = summary["by_user_model"]["m1"], summary["by_user_model"]["m2"]
    assert (m1["episodes"], m1["scored"], m1["avg_reward"], m1["pass_hat_k"]) == (
        2,
        2,
        1.0,
        {"1": 1.0, "2": None},
    )
    assert (m2["scored"], m2["errors"], m2["avg_reward"]) == (1, 1, 0.0)
    assert summary["by_domain"]["retail"]["pass_hat_k"] == {"1": 0.5, "2": 0.0}
    assert summary["by_domain"]["airline"]["avg_reward"] == 1.0
    # a single-domain run has no by_domain; a scripted user groups under its strategy
    single = [r(1, 0, 1.0, None)]
    assert "by_domain" not in summarize(single, 1)
    assert list(group_metrics(single, user_model_of, 1)) == ["scripted"]
