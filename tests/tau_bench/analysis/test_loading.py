"""Loading results: our JSONL log, the original τ-bench JSON, folders of both."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tau_bench.analysis.loading import (
    LOG,
    TAU_BENCH,
    ResultsLoadError,
    load_run,
    load_runs,
)
from tau_bench.analysis.tau_bench_json import guess_env, parse_run_stem, record_from_tau_bench
from tests.tau_bench.analysis.conftest import HISTORICAL, TASKS, Runs


def test_historical_file() -> None:
    run = load_run(HISTORICAL)
    assert run.source_format == TAU_BENCH
    assert len(run.records) == 200 and run.num_trials == 4
    assert run.task_ids == set(range(50))
    assert run.env == "airline"  # from the policy title in the trajectories
    assert run.label == "gpt-4o-airline" and run.agent == "gpt-4o-airline"
    first = run.records[0]
    assert first.task_id == 0 and first.trial == 0 and first.reward == 0.0
    assert first.user_cost > 0 and first.messages[0]["role"] == "system"
    assert first.task["user_id"] == "mia_li_3668"
    # Five episodes never finished in the original: reward 0, no reward info, still scored.
    assert sum(1 for r in run.records if r.reward_info is None) == 5
    assert not any(r.is_error for r in run.records)


def test_log_carries_config_and_metadata(runs: Runs) -> None:
    run = load_run(runs.sloppy)
    assert run.source_format == LOG and run.label == "sloppy"
    assert run.env == "airline" and run.num_trials == 2 and run.task_split == "test"
    assert run.agent_strategy == "oracle" and run.model == "sloppy/model-v1"
    assert run.agent == "oracle sloppy/model-v1"
    assert run.user_strategy == "scripted" and run.user_model is None and run.user == "scripted"
    assert run.task_ids == set(TASKS) and len(run.records) == 2 * len(TASKS)
    assert run.records[0].turns, "the log keeps per-turn latencies"


def test_runner_json_reads_like_its_log(runs: Runs) -> None:
    log = load_run(runs.sloppy)
    js = load_run(runs.sloppy.with_suffix(".json"))
    assert js.source_format == TAU_BENCH
    # metadata comes from the summary file next to it
    assert (js.label, js.env, js.model, js.num_trials) == (
        "sloppy",
        "airline",
        "sloppy/model-v1",
        2,
    )
    key = lambda r: (r.task_id, r.trial)  # noqa: E731
    assert [(key(r), r.reward) for r in sorted(js.records, key=key)] == [
        (key(r), r.reward) for r in sorted(log.records, key=key)
    ]
    assert sum(r.agent_cost for r in js.records) == pytest.approx(
        sum(r.agent_cost for r in log.records)
    )


def test_folder_prefers_logs_and_skips_other_json(runs: Runs, tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    shutil.copytree(runs.folder, folder)
    (folder / "analysis-x.json").write_text(json.dumps({"model": "m", "results": []}))
    (folder / "notes.json").write_text("not json")
    loaded = load_runs([folder])
    assert sorted(r.label for r in loaded.runs) == ["oracle", "sloppy", "subset"]
    assert all(r.source_format == LOG for r in loaded.runs)
    assert len(loaded.skipped) == 2 and any("analysis-x.json" in s for s in loaded.skipped)


def test_labels_are_made_unique(runs: Runs) -> None:
    loaded = load_runs([runs.oracle, runs.oracle])
    assert [r.label for r in loaded.runs] == ["oracle", "oracle#2"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not a tau run results log"),
        ("[1, 2]", "not a τ-bench results file"),
        ('{"a": 1}', "not a tau run results log"),
        ("[{", "not valid JSON"),
    ],
)
def test_unreadable_files_say_which(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ResultsLoadError, match=message) as info:
        load_run(path)
    assert "bad.json" in str(info.value)


def test_missing_paths_and_empty_folders(tmp_path: Path) -> None:
    with pytest.raises(ResultsLoadError, match="no such results file or folder"):
        load_runs([tmp_path / "nope.json"])
    with pytest.raises(ResultsLoadError, match="no results files in folder"):
        load_runs([tmp_path])
    summary = tmp_path / "x.summary.json"
    summary.write_text("{}")
    with pytest.raises(ResultsLoadError, match="run summary"):
        load_run(summary)


def test_original_error_entries_become_errored_records() -> None:
    record = record_from_tau_bench(
        {
            "task_id": 4,
            "reward": 0.0,
            "info": {"error": "boom", "traceback": "tb"},
            "traj": [],
            "trial": 2,
        }
    )
    assert record.is_error and record.reward is None
    assert (record.error or {})["message"] == "boom"
    assert (record.task_id, record.trial) == (4, 2)


def test_run_file_names_are_parsed() -> None:
    meta = parse_run_stem("tool-calling-gpt-4o-mini-0.0_range_0-50_user-gpt-4o-llm_0612101530")
    assert meta == {
        "agent_strategy": "tool-calling",
        "model": "gpt-4o-mini",
        "user_model": "gpt-4o",
        "user_strategy": "llm",
    }
    assert (
        parse_run_stem("decibel-default-0.0_range_0-10_user-gpt-4o-llm_0612101530_2")["model"]
        is None
    )
    assert parse_run_stem("gpt-4o-airline") == {}


def test_env_from_file_name_when_no_policy() -> None:
    assert guess_env([], "retail-run-3") == "retail"
    assert guess_env([], "airline_vs_retail") is None
    assert guess_env([], "results") is None
