"""Hostile and damaged results files: every reader refuses a malformed field with one
line naming the file and line (exit 2, no traceback), bounds what a file can make it
hold in memory, and says when lines of a log were unreadable."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tau_bench.analysis.bootstrap import MAX_RESAMPLES, paired_bootstrap
from tau_bench.analysis.compare import compare_runs, pass_ks
from tau_bench.analysis.loading import ResultsLoadError, load_run, load_runs
from tau_bench.analysis.tables import runs_table
from tau_bench.config import RunConfig, RunConfigError
from tau_bench.records import EpisodeRecord, RecordError
from tau_bench.runner import prepare_run
from tau_bench.tau3.interchange.rescore import Tau2FileError, read_results
from tests.conftest import DATA_DIR
from tests.tau_bench.analysis.conftest import TASKS, Runs

TAU = Path(sys.executable).with_name("tau")  # the installed console script
ENV = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
DEEP = "[" * 100_000 + "]" * 100_000


def _lines(log: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    header, *episodes = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    return header, episodes


def _write(path: Path, header: dict[str, Any], episodes: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in [header, *episodes]))
    return path


def _with_episode(runs: Runs, tmp_path: Path, index: int, **fields: Any) -> Path:
    """The oracle's log with fields of its episode `index` (line index + 2) replaced."""
    header, episodes = _lines(runs.oracle)
    episodes[index].update(fields)
    return _write(tmp_path / "bad.jsonl", header, episodes)


def _with_header(runs: Runs, tmp_path: Path, change: Any) -> Path:
    header, episodes = _lines(runs.oracle)
    change(header)
    return _write(tmp_path / "bad.jsonl", header, episodes)


def _tau(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TAU), *map(str, args)],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def _refused(proc: subprocess.CompletedProcess[str], *expected: str) -> None:
    """Exit 2 and one `error: ...` line on stderr holding every `expected`."""
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for text in expected:
        assert text in lines[0]


# -- A, B: malformed fields of a log record ----------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"error": "boom"}, "error: expected an object or null, got 'boom'"),
        ({"error": [1]}, "error: expected an object"),
        ({"error": {"kind": ["x"]}}, "error.kind: expected a string or null"),
        ({"error": {"message": {"a": 1}}}, "error.message: expected a string or null"),
        ({"reward": "0.5"}, "reward: expected a number from 0 to 1"),
        ({"reward": math.nan}, "got nan"),
        ({"reward": math.inf}, "got inf"),
        ({"reward": 5.0}, "got 5.0"),
        ({"reward": -3.0}, "got -3.0"),
        ({"reward": True}, "got True"),
        ({"trial": "x"}, "trial: expected a whole number >= 0, got 'x'"),
        ({"trial": -5}, "trial: expected a whole number >= 0"),
        ({"trial": 0.5}, "trial: expected a whole number >= 0"),
        ({"trial": 100_000_000}, "trial 100000000 exceeds the limit of 10,000"),
        ({"task_id": [1, 2]}, "task_id: expected an integer or DOMAIN/N"),
        ({"task_id": None}, "task_id: expected an integer or DOMAIN/N"),
        ({"task_id": 1.5}, "task_id: expected an integer or DOMAIN/N"),
        ({"task_id": {"a": 1}}, "task_id: expected"),
        ({"messages": "hello"}, "messages: expected a list of objects"),
        ({"messages": [1, 2, None]}, "messages[0]: expected an object"),
        ({"messages": None}, "messages: expected a list of objects"),
        ({"messages": [{"role": "assistant", "tool_calls": "x"}]}, "messages[0].tool_calls"),
        ({"messages": [{"role": "assistant", "tool_calls": [5]}]}, "messages[0].tool_calls[0]"),
        (
            {"messages": [{"role": "assistant", "tool_calls": [{"function": "f"}]}]},
            "messages[0].tool_calls[0].function",
        ),
        ({"turns": "x"}, "turns: expected a list of objects"),
        ({"turns": [{"latency": "x"}]}, "turns[0].latency: expected a finite number"),
        ({"agent_usage": "x"}, "agent_usage: expected an object"),
        ({"agent_usage": {"cost": "abc"}}, "agent_usage.cost: expected a finite number"),
        ({"cost": "x"}, "cost: expected an object or null"),
        ({"cost": {"agent": math.nan}}, "cost.agent: expected a finite number"),
        ({"duration": "x"}, "duration: expected a finite number"),
        ({"reward_info": "x"}, "reward_info: expected an object or null"),
        ({"reward_info": {"info": "y"}}, "reward_info.info: expected an object"),
        ({"reward_info": {"db_diff": "y"}}, "reward_info.db_diff"),
        ({"task": "x"}, "task: expected an object"),
        ({"task": None}, "task: expected an object"),
        ({"task": {"actions": "x"}}, "task.actions"),
        ({"warnings": "abc"}, "warnings: expected a list"),
        ({"domain": 5}, "domain: expected a string"),
        ({"user_model": 5}, "user_model: expected a string or null"),
        ({"steps": "2"}, "steps: expected a whole number"),
    ],
)
def test_a_malformed_record_is_refused_naming_file_and_line(
    runs: Runs, tmp_path: Path, fields: dict[str, Any], message: str
) -> None:
    path = _with_episode(runs, tmp_path, 3, **fields)
    with pytest.raises(ResultsLoadError) as info:
        load_run(path)
    assert str(info.value).startswith(f"{path} line 5: ")
    assert message in str(info.value)


def test_a_record_without_a_required_field_is_refused(runs: Runs, tmp_path: Path) -> None:
    header, episodes = _lines(runs.oracle)
    del episodes[0]["task_id"]
    path = _write(tmp_path / "bad.jsonl", header, episodes)
    with pytest.raises(ResultsLoadError, match=r"line 2: missing field\(s\): task_id"):
        load_run(path)


def test_from_dict_checks_and_normalises() -> None:
    base = {"type": "episode", "task_id": 3, "trial": 1, "reward": 1}
    record = EpisodeRecord.from_dict(base)
    assert record.reward == 1.0 and isinstance(record.reward, float)
    with pytest.raises(RecordError, match="exceeds the limit of 10"):
        EpisodeRecord.from_dict({**base, "trial": 10}, max_trials=10)
    # A TypeError too: `read_log` skips and counts it as it always skipped a record
    # missing a field, so its other callers see no new exception.
    with pytest.raises(TypeError):
        EpisodeRecord.from_dict({**base, "reward": "1"})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda h: h.update(config="x"), "line 1: header: config: expected an object"),
        (lambda h: h["config"].update(num_trials="x"), "config.num_trials: expected a whole"),
        (lambda h: h["config"].update(num_trials=10**9), "from 1 to 10,000, got 1000000000"),
        (lambda h: h["config"].update(env=5), "config.env: expected a string"),
        (lambda h: h["config"].update(user_models="abc"), "config.user_models"),
        (lambda h: h["config"].update(user_models=[None]), "config.user_models"),
        (lambda h: h.update(manifest="x"), "manifest: expected an object"),
        (lambda h: h["manifest"].update(agent=[1]), "manifest.agent: expected an object"),
        (lambda h: h["manifest"].update(suite={"domains": "x"}), "manifest.suite.domains"),
        (lambda h: h.update(run_name={"a": 1}), "run_name: expected a string"),
        (lambda h: h.update(fingerprint="x"), "fingerprint: expected an object"),
    ],
)
def test_a_malformed_header_is_refused(
    runs: Runs, tmp_path: Path, change: Any, message: str
) -> None:
    path = _with_header(runs, tmp_path, change)
    with pytest.raises(ResultsLoadError) as info:
        load_run(path)
    assert str(info.value).startswith(f"{path} line 1: header: ")
    assert message in str(info.value)


def test_a_malformed_file_in_a_folder_is_skipped_and_listed(runs: Runs, tmp_path: Path) -> None:
    _with_episode(runs, tmp_path, 0, error="boom")
    header, episodes = _lines(runs.oracle)
    _write(tmp_path / "good.jsonl", header, episodes)
    loaded = load_runs([tmp_path])
    assert [r.path.name for r in loaded.runs] == ["good.jsonl"]
    assert len(loaded.skipped) == 1 and "bad.jsonl line 2: error:" in loaded.skipped[0]


# -- A, B, F: the τ-bench JSON -----------------------------------------------------------


def _tau_bench(runs: Runs, tmp_path: Path, change: Any) -> Path:
    entries = json.loads(runs.oracle.with_suffix(".json").read_text())
    change(entries)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(entries))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda e: e[1].update(traj="hello"), "entry 1: malformed τ-bench entry (traj: expected"),
        (lambda e: e[1].update(traj=[1, 2]), "traj[0]: expected an object"),
        (lambda e: e[1].update(reward=math.nan), "reward: expected a number from 0 to 1"),
        (lambda e: e[1].update(reward="1.0"), "got '1.0'"),
        (lambda e: e[1].update(reward="inf"), "got 'inf'"),
        (lambda e: e[1].update(reward=2.0), "got 2.0"),
        (lambda e: e[1].update(trial=10**8), "trial 100000000 exceeds the limit"),
        (lambda e: e[1].update(trial="3"), "trial: expected a whole number"),
        (lambda e: e[1]["info"].update(reward_info={"reward": "x"}), "info.reward_info.reward"),
        (lambda e: e[1]["info"].update(task={"actions": "x"}), "info.task.actions"),
        (lambda e: e[1]["info"].update(errors=5), "info.errors: expected a list"),
        (lambda e: e[1]["info"].update(agent_cost="abc"), "info.agent_cost: expected a number"),
    ],
)
def test_a_malformed_tau_bench_entry_is_refused(
    runs: Runs, tmp_path: Path, change: Any, message: str
) -> None:
    path = _tau_bench(runs, tmp_path, change)
    with pytest.raises(ResultsLoadError) as info:
        load_run(path)
    assert str(info.value).startswith(f"{path} entry 1: ")
    assert message in str(info.value)


def test_f_duplicate_tau_bench_entries_are_refused(runs: Runs, tmp_path: Path) -> None:
    path = _tau_bench(runs, tmp_path, lambda e: e.extend([e[0], e[3]]))
    with pytest.raises(ResultsLoadError, match=r"2 \(task, trial\) pair\(s\) appear more") as info:
        load_run(path)
    assert "task 0 trial 0" in str(info.value)


def test_a_malformed_summary_is_refused(runs: Runs, tmp_path: Path) -> None:
    path = _tau_bench(runs, tmp_path, lambda e: None)
    summary = json.loads(runs.oracle.with_name("oracle.summary.json").read_text())
    summary["config"]["num_trials"] = 10**9
    path.with_name("bad.summary.json").write_text(json.dumps(summary))
    with pytest.raises(ResultsLoadError, match=r"bad.summary.json: config.num_trials"):
        load_run(path)


# -- E: nesting too deep -----------------------------------------------------------------


def test_e_deep_json_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    with pytest.raises(ResultsLoadError, match=r"deep\.json: not valid JSON .*nested too deep"):
        load_run(deep)
    entry = tmp_path / "entry.json"
    entry.write_text('[{"task_id": 0, "reward": 1, "info": ' + DEEP + "}]")
    with pytest.raises(ResultsLoadError, match="nested too deep"):
        load_run(entry)
    with pytest.raises(Tau2FileError, match="is not JSON: JSON nested too deep"):
        read_results(deep)


def test_e_deep_summary_is_refused(runs: Runs, tmp_path: Path) -> None:
    path = _tau_bench(runs, tmp_path, lambda e: None)
    path.with_name("bad.summary.json").write_text('{"config": ' + DEEP + "}")
    with pytest.raises(ResultsLoadError, match=r"bad\.summary\.json: not valid JSON"):
        load_run(path)


# -- C: trials held in memory ------------------------------------------------------------


def _resume_config(log: Path) -> RunConfig:
    return RunConfig(
        env="airline",
        agent_strategy="oracle",
        model="oracle-model",
        user_strategy="scripted",
        task_ids=TASKS,
        num_trials=2,
        log_dir=str(log.parent),
        data_dir=str(DATA_DIR),
        resume=str(log),
        quiet=True,
    )


def test_c_resume_refuses_a_huge_trial_before_planning(runs: Runs, tmp_path: Path) -> None:
    path = _with_episode(runs, tmp_path, 0, trial=100_000_000)
    with pytest.raises(RunConfigError) as info:
        prepare_run(_resume_config(path))
    assert str(info.value) == (
        f"cannot resume: {path} line 2: trial 100000000 exceeds the limit of 10,000 trials (0-9999)"
    )


@pytest.mark.parametrize("fingerprint", [None, "x", {"agent_options": "abc"}])
def test_a_resume_refuses_a_malformed_fingerprint(
    runs: Runs, tmp_path: Path, fingerprint: Any
) -> None:
    path = _with_header(runs, tmp_path, lambda h: h.update(fingerprint=fingerprint))
    with pytest.raises(RunConfigError, match="cannot resume"):
        prepare_run(_resume_config(path))


def test_tau_run_resume_of_a_malformed_header_is_one_line(runs: Runs, tmp_path: Path) -> None:
    """`tau run --resume` reads the header's config as its lowest settings layer before
    planning: a config that is not an object was a traceback there."""
    path = _with_header(runs, tmp_path, lambda h: h.update(config="x"))
    _refused(_tau("run", "--resume", path), "header: config: expected an object")


def test_a_resume_refuses_a_malformed_record(runs: Runs, tmp_path: Path) -> None:
    path = _with_episode(runs, tmp_path, 2, reward="0.5")
    with pytest.raises(RunConfigError, match=r"cannot resume: .* line 4: reward: expected"):
        prepare_run(_resume_config(path))


def test_c_the_resumed_log_still_resumes(runs: Runs, tmp_path: Path) -> None:
    header, episodes = _lines(runs.oracle)
    path = _write(tmp_path / "ok.jsonl", header, episodes)
    plan = prepare_run(_resume_config(path))
    assert plan.resumed and len(plan.existing) == len(episodes)


# -- D: unreadable lines are said ---------------------------------------------------------


def _damaged(runs: Runs, tmp_path: Path, *, tail: bytes = b"") -> Path:
    header, episodes = _lines(runs.oracle)
    lines = [json.dumps(x).encode() + b"\n" for x in [header, *episodes]]
    lines[3] = lines[3][:100] + b"\n"  # a corrupt line in the middle: one episode lost
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(b"".join(lines) + tail)
    return path


def test_d_unreadable_lines_are_counted_and_said(runs: Runs, tmp_path: Path) -> None:
    run = load_run(_damaged(runs, tmp_path))
    assert run.bad_lines == 1 and not run.unfinished_line
    assert run.unreadable_note == f"{run.path}: 1 unreadable line(s) skipped"
    unfinished = load_run(_damaged(runs, tmp_path, tail=b'{"type": "episode", "task_'))
    assert unfinished.bad_lines == 2 and unfinished.unfinished_line
    assert unfinished.unreadable_note is not None
    assert "2 unreadable line(s) skipped, the last one unfinished" in unfinished.unreadable_note
    comparison = compare_runs([run], resamples=10)
    assert comparison.rows[0].unreadable_lines == 1
    assert comparison.to_dict()["runs"][0]["unreadable_lines"] == 1
    assert "[1 unreadable line(s) skipped]" in comparison.rows[0].shown_label


def test_d_a_last_line_without_newline_that_reads_is_not_unfinished(
    runs: Runs, tmp_path: Path
) -> None:
    header, episodes = _lines(runs.oracle)
    path = tmp_path / "nonl.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [header, *episodes]))  # no final \n
    run = load_run(path)
    assert run.bad_lines == 0 and not run.unfinished_line and run.unreadable_note is None


# -- G, H: bounded bootstrap and pass^k columns -------------------------------------------


def test_g_bootstrap_resamples_are_bounded() -> None:
    with pytest.raises(ValueError, match="from 1 to 100,000"):
        paired_bootstrap([0.0, 1.0], resamples=MAX_RESAMPLES + 1)


def test_h_pass_k_columns_are_bounded(runs: Runs, tmp_path: Path) -> None:
    assert pass_ks(3) == [1, 2, 3]
    assert pass_ks(8) == list(range(1, 9))
    assert pass_ks(10_000) == [
        1,
        2,
        4,
        8,
        16,
        32,
        64,
        128,
        256,
        512,
        1024,
        2048,
        4096,
        8192,
        10_000,
    ]
    path = _with_header(runs, tmp_path, lambda h: h["config"].update(num_trials=10_000))
    comparison = compare_runs([load_run(path)], resamples=10)
    assert list(comparison.rows[0].pass_hat_k) == pass_ks(10_000)
    headers = [str(c.header) for c in runs_table(comparison).columns]
    assert "pass^10000" in headers and "pass^3" not in headers and len(headers) < 40


# -- through the installed console script -------------------------------------------------


def test_cli_commands_refuse_a_malformed_record_in_one_line(runs: Runs, tmp_path: Path) -> None:
    path = _with_episode(runs, tmp_path, 0, error="boom")
    expected = (f"{path} line 2: error: expected an object or null, got 'boom'",)
    _refused(_tau("compare", path), *expected)
    _refused(_tau("report", path, "-o", tmp_path / "r.html"), *expected)
    _refused(_tau("view", path), *expected)
    _refused(_tau("rescore", path), *expected)
    _refused(_tau("export", path, "-o", tmp_path / "ex"), *expected)
    assert not (tmp_path / "ex").exists()


def test_cli_refuses_nan_reward_and_huge_trial(runs: Runs, tmp_path: Path) -> None:
    nan = _with_episode(runs, tmp_path, 1, reward=math.nan)
    _refused(_tau("compare", nan), "line 3: reward: expected a number from 0 to 1", "got nan")
    _refused(_tau("export", nan, "-o", tmp_path / "ex"), "got nan")
    huge = _with_episode(runs, tmp_path, 1, trial=100_000_000)
    _refused(_tau("rescore", huge), "trial 100000000 exceeds the limit of 10,000")
    _refused(_tau("run", "--resume", huge, "--quiet"), "cannot resume", "exceeds the limit")


def test_cli_refuses_deep_and_duplicate_tau_bench_files(runs: Runs, tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    _refused(_tau("compare", deep), "deep.json: not valid JSON")
    _refused(_tau("view", deep), "deep.json: not valid JSON")
    dup = _tau_bench(runs, tmp_path, lambda e: e.extend(e))
    _refused(_tau("compare", dup), "appear more than once")


def test_cli_says_unreadable_lines_and_marks_the_run(runs: Runs, tmp_path: Path) -> None:
    path = _damaged(runs, tmp_path)
    note = f"{path}: 1 unreadable line(s) skipped"
    compare = _tau("compare", "--no-matrix", path)
    assert compare.returncode == 0, compare.stderr
    assert note in compare.stderr and "unreadable line(s) skipped]" in compare.stdout
    report = _tau("report", path, "-o", tmp_path / "r.html")
    assert report.returncode == 0 and note in report.stderr
    assert "1 unreadable line(s) skipped]" in (tmp_path / "r.html").read_text()
    for args in (("view", path), ("export", path, "-o", tmp_path / "ex")):
        proc = _tau(*args)
        assert proc.returncode == 0 and note in proc.stderr, proc.stderr


def test_cli_compare_folder_skips_a_malformed_file(runs: Runs, tmp_path: Path) -> None:
    _with_episode(runs, tmp_path, 0, task_id=[1, 2])
    header, episodes = _lines(runs.oracle)
    _write(tmp_path / "good.jsonl", header, episodes)
    proc = _tau("compare", "--no-matrix", tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "skipped: " in proc.stderr and "bad.jsonl line 2: task_id" in proc.stderr
