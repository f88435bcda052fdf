"""The report's honesty fixes: shared points stay visible, an all-errored run is not
drawn at 0, pass^k only with several trials, the system prompt once per run, the
failure reason in each collapsed row, markdown rendered, each run's own instructions."""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from pathlib import Path

import pytest

from tau_bench.analysis.compare import compare_runs
from tau_bench.analysis.loading import Run, load_run
from tau_bench.analysis.plots import write_pngs
from tau_bench.analysis.report import cost_chart, render_report
from tests.tau_bench.analysis.conftest import Runs

POLICY = "# Airline Agent Policy"


def _errored(run: Run) -> Run:
    records = copy.deepcopy(run.records)
    for r in records:
        r.reward, r.reward_info = None, None
        r.error = {"source": "agent", "kind": "timeout", "message": "no reply", "retryable": True}
    return replace(run, label="down", records=records)


@pytest.fixture(scope="module")
def four(runs: Runs) -> list[Run]:
    oracle = load_run(runs.oracle)
    twin = replace(load_run(runs.oracle), label="twin")
    return [oracle, twin, load_run(runs.sloppy), _errored(oracle)]


def test_shared_points_are_spread_and_an_all_errored_run_is_not_drawn(four: list[Run]) -> None:
    svg = cost_chart(compare_runs(four, intersect=True))
    circles = re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', svg)
    assert len(circles) == 3  # the errored run has no point (it would read as reward 0)
    assert len(set(circles)) == 3  # oracle and its twin share a value, not a place
    assert "not plotted (no scored episode): #4 down" in svg
    labels = [float(y) for y in re.findall(r'<text x="[\d.-]+" y="([\d.]+)"[^>]*class="pt"', svg)]
    assert min(abs(a - b) for i, a in enumerate(labels) for b in labels[i + 1 :]) >= 12
    assert re.findall(r'class="tick">(\$[^<]+)<', svg)[:3] == ["$0", "$0.001", "$0.002"]


def test_page_structure(four: list[Run]) -> None:
    html = render_report(compare_runs(four, intersect=True))
    assert html.count(POLICY) == 4  # once per run, not once per episode (40)
    assert "pass^k by k" in html
    failed = re.findall(
        r'<details class="episode"[^>]*data-outcome="(fail|error)"[^>]*>'
        r"<summary>(.*?)</summary>",
        html,
    )
    assert failed and all('class="why"' in s for _, s in failed)
    assert any("DB differs in" in s for o, s in failed if o == "fail")
    assert any("no reply" in s for o, s in failed if o == "error")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html


def test_one_trial_has_no_pass_k_chart(runs: Runs, tmp_path: Path) -> None:
    run = load_run(runs.oracle)
    one = replace(run, records=[r for r in run.records if r.trial == 0], num_trials=1)
    comparison = compare_runs([one])
    assert "pass^k by k" not in render_report(comparison)
    names = sorted(p.name for p in write_pngs(comparison, tmp_path))
    assert names == ["cost_reward.png", "per_task.png"]


def test_markdown_and_each_runs_own_instruction(runs: Runs) -> None:
    a = load_run(runs.oracle)
    b = replace(load_run(runs.oracle), label="b", records=copy.deepcopy(a.records))
    for r in b.records:
        r.task = {**r.task, "instruction": f"B-ONLY {r.task.get('instruction', '')}"}
        for m in r.messages:
            if m.get("role") == "assistant" and m.get("content"):
                m["content"] = "**Done**:\n- item"
    html = render_report(compare_runs([a, b]))
    run_a, run_b = html.split('<section class="run" data-run="2">')
    assert "B-ONLY" not in run_a.split('id="trajectories"')[1] and "B-ONLY" in run_b
    assert "<strong>Done</strong>:" in run_b and "<li>item</li>" in run_b
