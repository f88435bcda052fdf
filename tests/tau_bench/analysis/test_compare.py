"""compare_runs and the bootstrap: metrics, task sets, paired intervals."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tau_bench.analysis.bootstrap import paired_bootstrap
from tau_bench.analysis.compare import ComparisonError, compare_runs, ids_text
from tau_bench.analysis.loading import Run, load_run
from tau_bench.metrics import summarize
from tests.tau_bench.analysis.conftest import HISTORICAL, TASKS, Runs


@pytest.fixture(scope="module")
def historical() -> Run:
    return load_run(HISTORICAL)


def _variant(run: Run, label: str, solve: set[int]) -> Run:
    """A copy of `run` in which the tasks in `solve` succeed on every trial."""
    other = copy.deepcopy(run)
    other.label = label
    for r in other.records:
        if r.task_id in solve:
            r.reward = 1.0
    return other


def test_historical_metrics_match_the_published_run(historical: Run) -> None:
    comparison = compare_runs([historical])
    row = comparison.rows[0]
    assert (row.tasks, row.trials, row.episodes, row.errors) == (50, 4, 200, 0)
    assert row.avg_reward == pytest.approx(0.42)
    assert row.pass_hat_k[1] == pytest.approx(0.42)
    assert row.pass_hat_k[2] == pytest.approx(0.27333, abs=1e-5)
    assert row.pass_hat_k[3] == pytest.approx(0.22)
    assert row.pass_hat_k[4] == pytest.approx(0.20)
    assert row.cost_agent == 0 and row.cost_user == pytest.approx(0.50315)
    assert row.latency_p50 is None  # the original format has no timings
    assert comparison.paired == []
    cell = comparison.matrix[row.label][12]
    assert (cell.successes, cell.scored, cell.errors) == (4, 4, 0)


def test_rows_agree_with_the_runner_summary(runs: Runs) -> None:
    oracle, sloppy = load_run(runs.oracle), load_run(runs.sloppy)
    comparison = compare_runs([oracle, sloppy])
    for row, run in zip(comparison.rows, (oracle, sloppy), strict=True):
        expected = summarize(run.records, run.num_trials)
        assert row.avg_reward == expected["avg_reward"]
        assert row.pass_hat_k == {int(k): v for k, v in expected["pass_hat_k"].items()}
        assert row.cost_total == pytest.approx(expected["cost"]["total"])
        assert row.latency_p95 == expected["latency"]["agent_turn"]["p95"]
    assert comparison.rows[0].avg_reward == 1.0
    # the sloppy oracle forgets its write on even task+trial: tasks 0 and 2 fail trial 0,
    # tasks 1 and 3 fail trial 1; task 13 has no write and always passes
    assert comparison.rows[1].avg_reward == pytest.approx(0.6)
    assert comparison.rows[1].cost_total > 0
    sloppy_cells = comparison.matrix["sloppy"]
    assert {t: (c.successes, c.scored) for t, c in sloppy_cells.items()} == {
        0: (1, 2),
        1: (1, 2),
        2: (1, 2),
        3: (1, 2),
        13: (2, 2),
    }
    (pair,) = comparison.paired
    assert (pair.baseline, pair.other, pair.tasks) == ("oracle", "sloppy", len(TASKS))
    assert pair.diff == pytest.approx(-0.4)
    assert (pair.other_better, pair.baseline_better, pair.ties) == (0, 4, 1)
    assert pair.significant and pair.verdict == "oracle better"


def test_different_task_sets_are_refused_unless_intersect(runs: Runs) -> None:
    oracle, subset = load_run(runs.oracle), load_run(runs.subset)
    with pytest.raises(ComparisonError) as info:
        compare_runs([oracle, subset])
    message = str(info.value)
    assert "different tasks" in message and "--intersect" in message
    assert "oracle: 5" in message and "subset: 2" in message and "2-3, 13" in message
    comparison = compare_runs([oracle, subset], intersect=True)
    assert comparison.task_ids == [0, 1]
    assert comparison.rows[0].tasks == 2 and comparison.rows[0].episodes == 4
    assert comparison.dropped == {"oracle": [2, 3, 13]}


def test_different_domains_are_always_refused(runs: Runs, historical: Run) -> None:
    retail = copy.deepcopy(load_run(runs.oracle))
    retail.env, retail.label = "retail", "retail-run"
    with pytest.raises(ComparisonError, match="different domains"):
        compare_runs([load_run(runs.oracle), retail], intersect=True)


def test_no_shared_task(historical: Run) -> None:
    a = copy.deepcopy(historical)
    a.records = [r for r in a.records if r.task_id < 10]
    b = copy.deepcopy(historical)
    b.label, b.records = "b", [r for r in b.records if r.task_id >= 10]
    with pytest.raises(ComparisonError, match="share no task"):
        compare_runs([a, b], intersect=True)
    a.records = []
    with pytest.raises(ComparisonError, match="no episodes"):
        compare_runs([a])


def test_paired_ci_separates_real_from_noise(historical: Run) -> None:
    same = compare_runs([historical, _variant(historical, "same", set())]).paired[0]
    assert (same.diff, same.low, same.high) == (0, 0, 0) and not same.significant
    better = compare_runs(
        [historical, _variant(historical, "better", set(range(0, 50, 3)))]
    ).paired[0]
    assert better.diff > 0 and better.low > 0 and better.verdict == "better better"
    one_task = compare_runs([historical, _variant(historical, "one", {0})]).paired[0]
    assert one_task.low <= 0 < one_task.high and one_task.verdict == "no clear difference"


def test_bootstrap_is_seeded_and_baseline_selectable(historical: Run) -> None:
    other = _variant(historical, "other", {0, 3, 8, 10})
    a = compare_runs([historical, other], seed=7, resamples=2000).paired[0]
    b = compare_runs([historical, other], seed=7, resamples=2000).paired[0]
    assert (a.low, a.high) == (b.low, b.high)
    flipped = compare_runs([historical, other], baseline=1, seed=7, resamples=2000).paired[0]
    assert flipped.baseline == "other" and flipped.diff == pytest.approx(-a.diff)
    assert flipped.low == pytest.approx(-a.high) and flipped.high == pytest.approx(-a.low)


def test_errored_trials_are_not_scored(historical: Run) -> None:
    broken = copy.deepcopy(historical)
    broken.label = "broken"
    for r in broken.records:
        if r.task_id == 12 and r.trial < 2:
            r.reward, r.error = None, {"source": "agent", "kind": "timeout", "message": "x"}
    comparison = compare_runs([historical, broken])
    row = comparison.rows[1]
    assert row.errors == 2 and row.episodes == 200
    cell = comparison.matrix["broken"][12]
    assert (cell.successes, cell.scored, cell.errors) == (2, 2, 2)
    assert comparison.to_dict()["matrix"]["broken"]["12"]["errors"] == 2


def test_json_shape(runs: Runs) -> None:
    data = compare_runs([load_run(runs.oracle), load_run(runs.sloppy)]).to_dict()
    assert [r["label"] for r in data["runs"]] == ["oracle", "sloppy"]
    assert data["runs"][1]["pass_hat_k"] == {"1": 0.6, "2": pytest.approx(0.2)}
    assert data["tasks"] == sorted(TASKS)
    assert data["paired"][0]["significant"] is True
    assert data["matrix"]["sloppy"]["13"] == {
        "successes": 2,
        "scored": 2,
        "errors": 0,
        "mean_reward": 1.0,
    }


def test_ids_text() -> None:
    assert ids_text([5, 1, 2, 3, 9]) == "1-3, 5, 9"
    assert ids_text(range(0, 40, 2), limit=3) == "0, 2, 4, … (17 more)"


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from([-1.0, -0.5, 0.0, 0.5, 1.0]), min_size=1, max_size=40),
    st.integers(0, 2**16),
)
def test_bootstrap_interval_properties(diffs: list[float], seed: int) -> None:
    ci = paired_bootstrap(diffs, resamples=300, seed=seed)
    assert min(diffs) <= ci.low <= ci.high <= max(diffs)
    assert ci.estimate == pytest.approx(sum(diffs) / len(diffs))
    if all(d >= 0 for d in diffs):
        assert ci.low >= 0
    if len(set(diffs)) == 1:
        assert ci.low == ci.high == diffs[0]


def test_bootstrap_seed_matters() -> None:
    diffs = [((i * 37) % 23) / 23 - 0.4 for i in range(30)]
    a = paired_bootstrap(diffs, resamples=500, seed=1)
    assert a == paired_bootstrap(diffs, resamples=500, seed=1)
    b = paired_bootstrap(diffs, resamples=500, seed=2)
    assert (a.low, a.high) != (b.low, b.high) and a.estimate == b.estimate


def test_bootstrap_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        paired_bootstrap([])
    with pytest.raises(ValueError):
        paired_bootstrap([1.0], confidence=1.0)
    with pytest.raises(ValueError):
        paired_bootstrap([1.0], resamples=0)
