"""Official and clean-subset scores side by side: summary, `tau run`, compare, report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tau_bench.analysis.clean_subset import clean_subset, summary_rows, summary_section
from tau_bench.records import EpisodeRecord
from tests.tau_bench.tau3.tau3_runs import oracle_run, tau


def _rec(task_id: int | str, reward: float, trial: int = 0, domain: str = "") -> EpisodeRecord:
    return EpisodeRecord(task_id=task_id, trial=trial, reward=reward, domain=domain)


def test_clean_subset_leaves_out_broken_tasks_and_counts_their_trials() -> None:
    records = [_rec(6, 0.0), _rec(6, 0.0, 1), _rec(12, 1.0), _rec(12, 1.0, 1), _rec(0, 1.0)]
    result = clean_subset(records, "tau3/airline", num_trials=2)
    assert result is not None
    assert result.official["avg_reward"] == pytest.approx(3 / 5)
    assert result.clean["avg_reward"] == 1.0
    assert (result.official["tasks"], result.clean["tasks"]) == (3, 2)
    assert result.flagged_trials == 2
    assert result.excluded_tasks == {"6": ["tau2-bench#494"]}
    assert result.links["tau2-bench#494"].endswith("/issues/494")


def test_multi_domain_ids_and_mock_names() -> None:
    records = [
        _rec("tau3/retail/5", 0.0),
        _rec("tau3/airline/5", 1.0),
        _rec("update_task_with_user_tools", 0.0, domain="tau3/mock"),
    ]
    result = clean_subset(records, "tau3/retail,tau3/airline,tau3/mock", num_trials=1)
    assert result is not None
    assert set(result.excluded_tasks) == {"tau3/retail/5", "update_task_with_user_tools"}
    assert result.clean["avg_reward"] == 1.0


def test_weak_signal_issues_are_noted_not_excluded() -> None:
    records = [_rec(0, 1.0), _rec(0, 1.0, 1), _rec(12, 1.0)]
    result = clean_subset(records, "tau3/airline", num_trials=2)
    assert result is not None
    assert result.clean == result.official and result.flagged_trials == 0
    assert result.notes == {"tau2-bench#224": 2}
    telecom = clean_subset(
        [_rec("[mobile_data_issue]x", 1.0, domain="tau3/telecom-workflow")],
        "tau3/telecom-workflow",
        num_trials=1,
    )
    assert telecom is not None and telecom.notes == {"tau2-bench#459": 1}
    assert telecom.links["tau2-bench#459"].endswith("/issues/459")
    rows = dict(summary_rows(summary_section(records, "tau3/airline", 2)))
    assert rows["weak-signal notes (kept)"] == "tau2-bench#224: 2 trials"


def test_v1_runs_have_no_clean_subset() -> None:
    assert clean_subset([_rec(6, 0.0)], "airline", 1) is None
    assert summary_section([_rec(6, 0.0)], "airline", 1) == {}


@pytest.fixture(scope="module")
def run_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return oracle_run(tmp_path_factory.mktemp("clean") / "runs", "tau3/airline", "6,7,12", 2)


def test_run_summary_json_has_both_scores(run_log: Path) -> None:
    summary = json.loads(run_log.with_name(run_log.stem + ".summary.json").read_text())
    section = summary["clean_subset"]
    assert section["registry"] == "tau3 1.0.1"
    assert section["official"]["tasks"] == 3 and section["clean"]["tasks"] == 1
    assert section["flagged_trials"] == 4


def test_compare_and_report_show_both_and_flag_trials(run_log: Path, tmp_path: Path) -> None:
    out = tmp_path / "cmp.json"
    proc = tau("compare", run_log, "--no-matrix", "--json", out)
    assert "Official vs clean subset" in proc.stdout
    data = json.loads(out.read_text())
    (section,) = data["clean_subset"].values()
    assert section["flagged_trials"] == 4
    assert set(section["excluded_tasks"]) == {"6", "7"}
    html = tmp_path / "r.html"
    tau("report", run_log, "-o", html)
    page = html.read_text()
    assert 'id="clean-subset"' in page
    assert 'href="https://github.com/sierra-research/tau2-bench/issues/495"' in page
    notes = page.split("Weak-signal notes", 1)[1]  # task 6 is also in #224's list
    assert 'href="https://github.com/sierra-research/tau2-bench/issues/224"' in notes
