"""`tau compare / report / rescore / export` through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from tau_bench.cli.app import app
from tests.conftest import DATA_DIR
from tests.tau_bench.analysis.conftest import HISTORICAL, Runs

ENV = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def test_compare_prints_table_pairs_and_matrix(runs: Runs, tmp_path: Path) -> None:
    out = tmp_path / "cmp.json"
    result = invoke("compare", runs.oracle, runs.sloppy, "--json", out)
    assert result.exit_code == 0, result.output
    text = result.output
    for expected in (
        "Runs compared on 5 tasks",
        "pass^2",
        "oracle sloppy/model-v1",
        "oracle better",
        "[-0.500, -0.200]",
        "Per task",
    ):
        assert expected in text
    data = json.loads(out.read_text())
    assert [r["label"] for r in data["runs"]] == ["oracle", "sloppy"]
    assert data["paired"][0]["diff"] == pytest.approx(-0.4)


def test_compare_folder_and_baseline_by_label(runs: Runs) -> None:
    result = invoke("compare", runs.oracle, runs.sloppy, "--baseline", "sloppy", "--no-matrix")
    assert result.exit_code == 0, result.output
    assert "Per task" not in result.output and "oracle better" in result.output
    result = invoke("compare", runs.oracle, runs.sloppy, "--baseline", "nope")
    assert result.exit_code == 2 and "--baseline 'nope' is not one of the runs" in result.output


def test_compare_refuses_different_task_sets_with_exit_3(runs: Runs) -> None:
    """Through the console entry point (run_cli), as a user runs it: a different task set
    is one of the differences `tau compare` refuses (exit 3, a table on stdout)."""
    proc = subprocess.run(
        [sys.executable, "-m", "tau_bench.cli.app", "compare", str(runs.folder)],
        capture_output=True,
        text=True,
        env=ENV,
        check=False,
    )
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith("error: runs differ in task set")
    assert "--intersect" in proc.stdout and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    ok = invoke("compare", runs.folder, "--intersect", "--no-matrix")
    assert ok.exit_code == 0 and "Runs compared on 2 tasks" in ok.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["compare", "/nonexistent/x.json"], "no such results file or folder"),
        (["compare", str(HISTORICAL), "--confidence", "95"], "--confidence must be between"),
        (["compare", str(HISTORICAL), "--bootstrap", "0"], "--bootstrap must be from 1"),
        (["compare", str(HISTORICAL), "--bootstrap", "100001"], "to 100,000"),
        (["report", str(HISTORICAL), "--bootstrap", "10000000"], "to 100,000"),
        (["rescore", str(HISTORICAL), "--env", "retail"], "cannot be rescored on retail"),
        (["rescore", str(DATA_DIR), "--env", "airline"], "takes one results file"),
        (["export", str(HISTORICAL), "-o", "/tmp/x", "--format", "csv"], "unknown export format"),
    ],
)
def test_user_errors_exit_2(args: list[str], message: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_rescore_historical_reproduces_every_finished_episode(tmp_path: Path) -> None:
    out = tmp_path / "rescored.json"
    result = invoke("rescore", HISTORICAL, "--env", "airline", "-o", out)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "195 of 200 episodes rescored on airline test: 0 changed" in text
    assert "average reward 0.420 -> 0.420" in text
    assert "skipped 5: unfinished in the original" in text
    assert "task instruction changed since the run" in text
    data = json.loads(out.read_text())
    assert len(data) == 200 and data[0]["info"]["rescored"]["previous_reward"] == 0.0
    assert data[0]["info"]["reward_info"]["db_diff"], "rescoring adds the DB diff"


def test_rescore_score_unfinished_lists_changes() -> None:
    result = invoke("rescore", HISTORICAL, "--env", "airline", "--score-unfinished")
    assert result.exit_code == 0, result.output
    assert "Rewards that changed" in result.output
    assert "2 changed (2 now pass, 0 now fail)" in " ".join(result.output.split())


def test_report_writes_html(runs: Runs, tmp_path: Path) -> None:
    out = tmp_path / "r" / "report.html"
    result = invoke("report", runs.oracle, runs.sloppy, "-o", out, "--title", "My <agents>")
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert "<title>My &lt;agents&gt;</title>" in html and 'id="trajectories"' in html


def test_report_png_dir_without_matplotlib(
    runs: Runs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if not installed
    out = tmp_path / "report.html"
    result = invoke("report", runs.oracle, "-o", out, "--png-dir", tmp_path / "png")
    assert result.exit_code == 2
    assert "matplotlib" in result.output and "tau-adapters[report]" in result.output
    assert not out.exists(), "nothing is written when an option cannot be honoured"


def test_export_mt_bench(runs: Runs, tmp_path: Path) -> None:
    result = invoke("export", runs.sloppy, "--format", "mt-bench", "-o", tmp_path)
    assert result.exit_code == 0, result.output
    (folder,) = tmp_path.iterdir()
    assert folder.name.startswith("airline_")
    names = sorted(p.name for p in folder.iterdir())
    assert "sloppy_model-v1_scores.jsonl" in names
    assert "sloppy_model-v1_task0_trajectory.jsonl" in names
    assert "sloppy_model-v1_task0_trial1_trajectory.jsonl" in names


def test_compare_and_report_take_a_task_filter(runs: Runs, tmp_path: Path) -> None:
    from tests.tau_bench.analysis.conftest import TASKS

    wanted = f"{TASKS[0]}-{TASKS[0]} {TASKS[2]}"
    result = invoke("compare", runs.oracle, runs.sloppy, "--tasks", wanted)
    assert result.exit_code == 0, result.output
    assert "Runs compared on 2 tasks" in result.output
    page = tmp_path / "r.html"
    result = invoke("report", runs.oracle, runs.sloppy, "--tasks", wanted, "-o", page)
    assert result.exit_code == 0, result.output
    assert page.exists()
    result = invoke("compare", runs.oracle, runs.sloppy, "--tasks", "9999")
    assert result.exit_code == 2 and "selects no episode" in result.output
    result = invoke("compare", runs.oracle, "--tasks", "4-1")
    assert result.exit_code == 2 and "ends before it starts" in result.output
