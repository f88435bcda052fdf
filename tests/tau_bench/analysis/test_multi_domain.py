"""Multi-domain runs (`"retail/12"` task ids) and user-model rotation through every
analysis: loading, compare (+ --by-user-model), report, MT-bench export, rescore,
analyze. The runs are real, made by the runner (see conftest `multi`)."""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from tau_bench import terminal
from tau_bench.analysis.analyze import failed_records
from tau_bench.analysis.compare import ComparisonError, UnknownBaseline, compare_runs
from tau_bench.analysis.loading import load_run
from tau_bench.analysis.mt_bench import write_mt_bench
from tau_bench.analysis.report import render_report, write_report
from tau_bench.analysis.rescore import rescore_run
from tau_bench.analysis.tables import matrix_table, runs_table
from tau_bench.cli.app import app
from tau_bench.domains import load_domain
from tau_bench.results_log import read_log
from tests.conftest import DATA_DIR
from tests.tau_bench.analysis.conftest import ROTATION, MultiRuns, Runs
from tests.tau_bench.analysis.test_report import _browse

TASKS = ["airline/0", "airline/1", "retail/0", "retail/1"]
# The rotation's round-robin over (trial, task in selection order: retail first).
ROTATED = {
    ("retail/0", 0): "model-a",
    ("retail/1", 0): "model-b",
    ("airline/0", 0): "model-c",
    ("airline/1", 0): "model-a",
    ("retail/0", 1): "model-b",
    ("retail/1", 1): "model-c",
    ("airline/0", 1): "model-a",
    ("airline/1", 1): "model-b",
}


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def _text(table: Any) -> str:
    console = terminal.console(width=250, record=True)
    console.print(table)
    return console.export_text()


def _copy_alone(src: Path, folder: Path, summary: bool = True) -> Path:
    """The τ-bench file (and its summary) without the log next to it."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, folder / src.name)
    side = src.with_name(src.stem + ".summary.json")
    if summary:
        shutil.copy(side, folder / side.name)
    return folder / src.name


# -- loading ---------------------------------------------------------------------------


def test_multi_domain_results_file_loads(multi: MultiRuns, tmp_path: Path) -> None:
    run = load_run(multi.results(multi.oracle))
    assert run.source_format == "tau-bench" and run.env == "retail,airline"
    assert run.domains == ["retail", "airline"] and run.namespaced
    assert run.task_ids == set(TASKS)
    assert {(r.task_id, r.domain) for r in run.records} == {(t, t.split("/")[0]) for t in TASKS}
    assert [r.reward for r in run.records] == [1.0] * 8

    log = load_run(multi.oracle)
    assert [(r.trial, r.task_id) for r in log.records] == [(0, t) for t in TASKS] + [
        (1, t) for t in TASKS
    ]
    # without its summary, the domains come from the ids (in order of appearance)
    alone = load_run(_copy_alone(multi.results(multi.oracle), tmp_path, summary=False))
    assert alone.env == "retail,airline"


def test_malformed_task_id_is_a_load_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"task_id": None, "reward": 1.0, "traj": [], "trial": 0}]))
    result = invoke("compare", bad)
    assert result.exit_code == 2 and "malformed τ-bench entry" in result.output


# -- compare ---------------------------------------------------------------------------


def test_compare_multi_domain_results_files(multi: MultiRuns, tmp_path: Path) -> None:
    out = tmp_path / "cmp.json"
    result = invoke(
        "compare", multi.results(multi.oracle), multi.results(multi.sloppy), "--json", out
    )
    assert result.exit_code == 0, result.output
    assert "Runs compared on 4 tasks" in result.output
    assert re.search(r"retail/1 +│ +2/2 +│ +2/2", result.output)
    assert re.search(r"airline/0 +│ +2/2 +│ +1/2", result.output)
    data = json.loads(out.read_text())
    assert data["tasks"] == TASKS
    assert list(data["matrix"]["multi-sloppy"]) == TASKS
    assert data["matrix"]["multi-sloppy"]["airline/1"]["successes"] == 1
    (pair,) = data["paired"]
    # per task: airline/0 and airline/1 lose 0.5, retail ties
    assert pair["diff"] == pytest.approx(-0.25) and pair["tasks"] == 4
    assert (pair["other_better"], pair["baseline_better"], pair["ties"]) == (0, 2, 2)
    assert -0.5 <= pair["low"] <= pair["high"] <= 0


def test_json_and_log_of_one_run_agree(multi: MultiRuns) -> None:
    comparison = compare_runs([load_run(multi.sloppy), load_run(multi.results(multi.sloppy))])
    a, b = comparison.rows
    assert (a.avg_reward, a.pass_hat_k) == (b.avg_reward, b.pass_hat_k) == (0.75, {1: 0.75, 2: 0.5})
    assert comparison.paired[0].diff == 0 and comparison.task_ids == TASKS


def test_single_domain_run_lines_up_with_a_multi_domain_one(runs: Runs, multi: MultiRuns) -> None:
    airline, both = load_run(runs.oracle), load_run(multi.oracle)
    with pytest.raises(ComparisonError) as info:
        compare_runs([airline, both])
    assert "not in every run: airline/2-3, airline/13, retail/0-1" in str(info.value)
    comparison = compare_runs([airline, both], intersect=True)
    assert comparison.task_ids == ["airline/0", "airline/1"]
    assert comparison.dropped == {
        "oracle": ["airline/2", "airline/3", "airline/13"],
        "multi-oracle": ["retail/0", "retail/1"],
    }
    assert [row.episodes for row in comparison.rows] == [4, 4]
    assert comparison.runs[0].records[0].task_id == "airline/0"
    assert airline.records[0].task_id == 0, "the loaded run is not modified"


def test_plain_ids_of_an_unknown_domain_are_refused(runs: Runs, multi: MultiRuns) -> None:
    unknown = copy.deepcopy(load_run(runs.oracle))
    unknown.env = None
    for r in unknown.records:
        r.domain = ""
    with pytest.raises(ComparisonError, match="domain is unknown: it cannot be compared"):
        compare_runs([unknown, load_run(multi.oracle)], intersect=True)


# -- user-model rotation -----------------------------------------------------------------


def test_rotation_shows_its_user_model_mix(multi: MultiRuns) -> None:
    run = load_run(multi.rotation)
    assert {r.key: r.user_model for r in run.records} == ROTATED
    (row,) = compare_runs([run]).rows
    assert row.user_models == {"model-a": 3, "model-b": 3, "model-c": 2}
    assert "model-a ×3, model-b ×3, model-c ×2" in _text(runs_table(compare_runs([run])))


def test_by_user_model_makes_a_row_per_model(multi: MultiRuns) -> None:
    run = load_run(multi.rotation)
    comparison = compare_runs([run], by_user_model=True)
    labels = [f"multi-rotation [{m}]" for m in ROTATION]
    assert [row.label for row in comparison.rows] == labels
    assert [(row.user, row.episodes) for row in comparison.rows] == [
        ("model-a", 3),
        ("model-b", 3),
        ("model-c", 2),
    ]
    assert comparison.task_ids == TASKS, "compared on the tasks of the whole run"
    assert set(comparison.matrix[labels[2]]) == {"airline/0", "retail/1"}
    # each model is paired with the baseline on the tasks both had
    assert [(p.other, p.tasks, p.unpaired_tasks) for p in comparison.paired] == [
        (labels[1], 2, 2),
        (labels[2], 1, 3),
    ]
    table = _text(runs_table(comparison)) + _text(matrix_table(comparison))
    assert "multi-rotation [model-c]" in table, "labels are not taken for rich markup"
    by_label = compare_runs([run], by_user_model=True, baseline=labels[1])
    assert by_label.paired[0].baseline == labels[1]
    with pytest.raises(UnknownBaseline, match="baseline 'nope' is not one of the runs"):
        compare_runs([run], by_user_model=True, baseline="nope")
    data = comparison.to_dict()
    assert data["by_user_model"] is True and data["runs"][0]["user_models"] == {"model-a": 3}
    # a run without a rotation is one row either way
    assert len(compare_runs([load_run(multi.oracle)], by_user_model=True).rows) == 1


def test_rotation_results_file_knows_each_user_model(multi: MultiRuns, tmp_path: Path) -> None:
    src = multi.results(multi.rotation)
    with_log = load_run(src)
    assert {r.key: r.user_model for r in with_log.records} == ROTATED
    # alone, the complete file's order is the sample order: the round-robin gives them
    alone = load_run(_copy_alone(src, tmp_path / "alone"))
    assert {r.key: r.user_model for r in alone.records} == ROTATED
    assert len(compare_runs([alone], by_user_model=True).rows) == 3
    # an incomplete file (an episode missing) cannot say which model each episode had
    partial = _copy_alone(src, tmp_path / "partial")
    partial.write_text(json.dumps(json.loads(partial.read_text())[1:]))
    run = load_run(partial)
    assert {r.user_model for r in run.records} == {None}
    assert run.user == "model-a, model-b, model-c (rotation)"
    assert len(compare_runs([run], by_user_model=True).rows) == 1


def test_cli_by_user_model(multi: MultiRuns, tmp_path: Path) -> None:
    out = tmp_path / "cmp.json"
    result = invoke(
        "compare",
        multi.results(multi.rotation),
        "--by-user-model",
        "--baseline",
        "2",
        "--json",
        out,
    )
    assert result.exit_code == 0, result.output
    assert "multi-rotation [model-a]" in result.output
    data = json.loads(out.read_text())
    assert [p["baseline"] for p in data["paired"]] == ["multi-rotation [model-b]"] * 2
    plain = invoke("compare", multi.rotation, "--no-matrix")
    assert plain.exit_code == 0 and "model-a ×3, model-b ×3, model-c ×2" in plain.output
    bad = invoke("compare", multi.rotation, "--by-user-model", "--baseline", "9")
    assert bad.exit_code == 2 and "--baseline '9' is not one of the runs (1=" in bad.output

    html_out = tmp_path / "report.html"
    result = invoke("report", multi.rotation, "--by-user-model", "-o", html_out)
    assert result.exit_code == 0, result.output
    html = html_out.read_text()
    assert html.count('<section class="run"') == 3
    assert "multi-rotation [model-c]" in html and html.count('class="episode"') == 8


# -- report ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def multi_report(multi: MultiRuns, tmp_path_factory: pytest.TempPathFactory) -> Path:
    comparison = compare_runs([load_run(multi.oracle), load_run(multi.sloppy)])
    return write_report(tmp_path_factory.mktemp("multi-report") / "report.html", comparison)


def test_report_names_namespaced_tasks(multi_report: Path) -> None:
    html = multi_report.read_text()
    for run in (1, 2):
        for task in TASKS:
            assert f'href="#t-{run}-{task}"' in html and f'id="t-{run}-{task}"' in html
            assert f'data-task="{task}"' in html
    assert 'id="e-2-airline/0-0"' in html and html.count('class="episode"') == 16
    assert "tasks of retail, airline" in html


def test_report_of_odd_task_ids_is_escaped(multi: MultiRuns) -> None:
    run = copy.deepcopy(load_run(multi.oracle))
    for r in run.records:
        r.task_id = f'<b x="1">{r.task_id}'
    html = render_report(compare_runs([run]))
    assert '<b x="1">' not in html and "&lt;b x=&quot;1&quot;&gt;retail/0" in html
    assert 'href="#t-1-%3Cb%20x%3D%221%22%3Eretail/0"' in html


def test_chromium_filters_namespaced_tasks(multi_report: Path, tmp_path: Path) -> None:
    url = multi_report.resolve().as_uri()
    dom = _browse(url + "?task=0", tmp_path, "--dump-dom").stdout
    assert 'data-ready="1"' in dom and "8 of 16 episodes shown" in dom  # retail/0, airline/0
    dom = _browse(url + "?task=retail/0&run=2#e-2-airline/1-1", tmp_path, "--dump-dom").stdout
    # the linked episode is outside the filter: the filters are cleared and it is opened
    assert "16 of 16 episodes shown" in dom
    assert re.search(r'<details class="episode" id="e-2-airline/1-1"[^>]*open=""', dom)
    dom = _browse(url + "?task=retail/0&run=2", tmp_path, "--dump-dom").stdout
    assert "2 of 16 episodes shown" in dom


# -- MT-bench --------------------------------------------------------------------------


def test_mt_bench_names_namespaced_tasks(multi: MultiRuns, tmp_path: Path) -> None:
    run = load_run(multi.oracle)
    folder = write_mt_bench(run.records, tmp_path, "retail,airline", "oracle")
    assert folder.name.startswith("retail_airline_")
    names = {p.name for p in folder.iterdir()}
    expected = {f"oracle_task{t.replace('/', '-')}_trajectory.jsonl" for t in TASKS}
    expected |= {f"oracle_task{t.replace('/', '-')}_trial1_trajectory.jsonl" for t in TASKS}
    assert names == expected | {"oracle_scores.jsonl", "oracle_scores.extra.jsonl"}
    scores = [json.loads(line) for line in (folder / "oracle_scores.jsonl").open()]
    extras = [json.loads(line) for line in (folder / "oracle_scores.extra.jsonl").open()]
    assert [s["task-id"] for s in scores] == [
        "task-" + t.replace("/", "-") for t in TASKS for _ in (0, 1)
    ]
    assert [(e["task"], e["trial"]) for e in extras] == [(t, k) for t in TASKS for k in (0, 1)]


def test_mt_bench_never_overwrites_on_a_file_name_clash(multi: MultiRuns, tmp_path: Path) -> None:
    a, b = copy.deepcopy(load_run(multi.oracle).records[:2])
    a.task_id, b.task_id = "x/1", "x-1"
    folder = write_mt_bench([a, b], tmp_path, "d", "m")
    assert sorted(p.name for p in folder.iterdir()) == [
        "m_scores.extra.jsonl",
        "m_scores.jsonl",
        "m_taskx-1_2_trajectory.jsonl",
        "m_taskx-1_trajectory.jsonl",
    ]


# -- rescore ---------------------------------------------------------------------------


def test_rescore_multi_domain_without_env(multi: MultiRuns, tmp_path: Path) -> None:
    src = _copy_alone(multi.results(multi.oracle), tmp_path / "in")
    entries = json.loads(src.read_text())
    spoiled = next(e for e in entries if (e["task_id"], e["trial"]) == ("retail/1", 0))
    spoiled["reward"] = 0.0
    src.write_text(json.dumps(entries))
    out = tmp_path / "out.json"
    result = invoke("rescore", src, "-o", out)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "8 of 8 episodes rescored on retail,airline test: 1 changed (1 now pass" in text
    assert re.search(r"retail/1 +│ +0 +│ +0 +│ +1 ", result.output)
    data = json.loads(out.read_text())
    assert [(e["task_id"], e["reward"]) for e in data] == [(e["task_id"], 1.0) for e in entries]
    assert data[1]["info"]["rescored"]["env"] == "retail,airline"


def test_rescore_multi_domain_log_on_one_domain(multi: MultiRuns, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    result = invoke("rescore", multi.sloppy, "--env", "airline", "-o", out)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "4 of 8 episodes rescored on airline test: 0 changed" in text
    assert "skipped 4: domain retail not rescored (rescoring on airline)" in text
    contents = read_log(out)
    assert contents.header["rescored"]["env"] == "airline"
    assert {k: r.reward for k, r in contents.records.items()}[("airline/0", 0)] == 0.0

    # as a library call: the domains by name
    run = load_run(multi.sloppy)
    domains = {n: load_domain(n, DATA_DIR) for n in ("retail", "airline")}
    result_both = rescore_run(run, domains)
    assert [e.new_reward for e in result_both.episodes] == [r.reward for r in run.records]


def test_rescore_needs_env_when_the_file_does_not_say(tmp_path: Path) -> None:
    src = tmp_path / "results.json"
    src.write_text(json.dumps([{"task_id": 0, "reward": 1.0, "trial": 0, "traj": []}]))
    result = invoke("rescore", src)
    assert result.exit_code == 2
    assert "does not say its domain: pass --env airline or --env retail" in result.output
    assert invoke("rescore", src, "--env", "airline").exit_code == 0


# -- analyze ---------------------------------------------------------------------------


def test_failed_records_in_task_order(multi: MultiRuns) -> None:
    failed = failed_records(load_run(multi.results(multi.sloppy)))
    assert [(r.task_id, r.trial) for r in failed] == [("airline/0", 0), ("airline/1", 1)]
