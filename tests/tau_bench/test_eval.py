"""`tau eval`: pass@k / pass^k estimators, per-user-model metrics and spread, the command."""

from __future__ import annotations

import itertools
import json
import math
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tau_bench.cli.app import app
from tau_bench.config import RunConfigError, default_ks, eval_config_from_mapping
from tau_bench.metrics import eval_metrics, pass_at_k, pass_hat_k
from tau_bench.records import EpisodeRecord
from tau_bench.results import write_json_atomic
from tau_bench.users.prompts import GREETING
from tests.conftest import DATA_DIR
from tests.tau_bench.agents.fake_llm import (
    FakeLLM,
    Reply,
    Request,
    fake_llm,  # noqa: F401
    llm_env,  # noqa: F401
)

# -- the estimators, by hand ----------------------------------------------------------


def test_pass_at_k_hand_computed():
    counts = {"a": (1, 3), "b": (0, 3), "c": (3, 3)}
    # a: 1/3, 2/3, 1 ; b: 0, 0, 0 ; c: 1, 1, 1
    assert pass_at_k(counts, 1) == pytest.approx((1 / 3 + 0 + 1) / 3)
    assert pass_at_k(counts, 2) == pytest.approx((2 / 3 + 0 + 1) / 3)
    assert pass_at_k(counts, 3) == pytest.approx(2 / 3)
    # pass^k on the same counts: a: 1/3, 0, 0
    assert pass_hat_k(counts, 1) == pytest.approx(4 / 9)
    assert pass_hat_k(counts, 2) == pytest.approx(1 / 3)
    # 2 successes in 5: pass@2 = 1 - C(3,2)/C(5,2) = 0.7 ; pass^2 = C(2,2)/C(5,2) = 0.1
    assert pass_at_k({"t": (2, 5)}, 2) == pytest.approx(0.7)
    assert pass_hat_k({"t": (2, 5)}, 2) == pytest.approx(0.1)


def test_pass_at_k_skips_tasks_with_fewer_than_k_trials():
    assert pass_at_k({"a": (1, 1), "b": (2, 4)}, 2) == pytest.approx(1 - 1 / 6)
    assert pass_at_k({"a": (1, 1)}, 2) is None
    with pytest.raises(ValueError):
        pass_at_k({"a": (1, 1)}, 0)


@pytest.mark.parametrize(("n", "k"), [(n, k) for n in range(1, 7) for k in range(1, n + 1)])
def test_pass_at_k_and_pass_hat_k_count_k_subsets(n, k):
    """pass@k: share of k-subsets of the n trials with a success; pass^k: all successes."""
    for c in range(n + 1):
        trials = [1] * c + [0] * (n - c)
        subsets = list(itertools.combinations(trials, k))
        any_share = sum(1 for s in subsets if any(s)) / len(subsets)
        all_share = sum(1 for s in subsets if all(s)) / len(subsets)
        assert pass_at_k({"t": (c, n)}, k) == pytest.approx(any_share)
        assert pass_hat_k({"t": (c, n)}, k) == pytest.approx(all_share)


def rec(task: int, trial: int, reward: float | None, model: str) -> EpisodeRecord:
    error = {"kind": "llm_unavailable"} if reward is None else None
    return EpisodeRecord(task_id=task, trial=trial, reward=reward, user_model=model, error=error)


def test_eval_metrics_per_model_overall_and_spread():
    groups = {
        "A": [rec(1, 0, 1.0, "A"), rec(1, 1, 1.0, "A"), rec(2, 0, 1.0, "A"), rec(2, 1, 0.0, "A")],
        "B": [
            rec(1, 0, 0.0, "B"),
            rec(1, 1, 0.0, "B"),
            rec(2, 0, 1.0, "B"),
            rec(2, 1, 0.0, "B"),
            rec(2, 2, None, "B"),  # errored: not scored, counted
        ],
    }
    m = eval_metrics(groups, [1, 2])
    a, b, overall = m["per_user_model"]["A"], m["per_user_model"]["B"], m["overall"]
    assert a["pass_hat_k"] == {"1": 0.75, "2": 0.5} and a["pass_at_k"] == {"1": 0.75, "2": 1.0}
    assert b["pass_hat_k"] == {"1": 0.25, "2": 0.0} and b["pass_at_k"] == {"1": 0.25, "2": 0.5}
    assert (b["episodes"], b["scored"], b["errors"], b["tasks"]) == (5, 4, 1, 2)
    # overall: the four (model, task) pairs
    assert overall["pass_hat_k"] == {"1": 0.5, "2": 0.25}
    assert overall["pass_at_k"] == {"1": 0.5, "2": 0.75}
    assert (overall["episodes"], overall["errors"], overall["tasks"]) == (9, 1, 2)
    spread = m["spread"]["pass_hat_1"]
    assert (spread["min"], spread["max"]) == (0.25, 0.75)
    assert spread["stdev"] == pytest.approx(0.5 / math.sqrt(2))
    assert (spread["min_user_model"], spread["max_user_model"]) == ("B", "A")


# -- the eval file ---------------------------------------------------------------------


def test_eval_config_from_a_mapping(tmp_path):
    cfg = eval_config_from_mapping(
        {
            "name": "e1",
            "user-models": "openai/a, anthropic/b",
            "num-samples": 5,
            "env": "airline",
            "agent-strategy": "oracle",
            "temperature": 0.7,
            "top-p": 0.9,
            "user-temperature": 1.0,
            "max-steps": 12,
            "log-dir": str(tmp_path),
        }
    )
    assert cfg.user_models == ["openai/a", "anthropic/b"] and cfg.k_values == [1, 2, 4, 5]
    run = cfg.run_config("anthropic/b", max_concurrency=3)
    assert (run.user_model, run.user_model_provider, run.num_trials) == (
        "anthropic/b",
        "anthropic",
        5,
    )
    assert (run.temperature, run.top_p, run.user_temperature, run.max_steps) == (0.7, 0.9, 1.0, 12)
    assert run.run_name == "e1__anthropic_b" and run.log_dir == str(tmp_path / "e1")
    assert run.max_concurrency == 3
    assert cfg.output_path == tmp_path / "e1.eval.json"
    assert default_ks(1) == [1] and default_ks(8) == [1, 2, 4, 8]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"num_samples": 2}, "user_models"),
        ({"user_models": ["a"], "num_samples": 2, "ks": [3]}, "k=3 must be between 1 and"),
        ({"user_models": ["a"], "num_samples": 2, "num_trials": 3}, "same setting"),
        ({"user_models": ["a", "a"]}, "twice"),
        ({"user_models": ["openai/gpt-4o", "openai:gpt-4o"]}, "would write the same files"),
        ({"user_models": ["a"], "envv": "x"}, "envv: unknown setting"),
        ({"user_models": ["a"], "run_name": "x"}, "run_name is set by tau eval"),
        ({"user_models": ["a"], "name": "a/b"}, "file-name part"),
        ({"user_models": ["a"], "top_p": 1.5}, "top_p"),
    ],
)
def test_eval_config_errors(data, message):
    with pytest.raises(RunConfigError, match=message):
        eval_config_from_mapping(data)


# -- the command, end to end with mocked user models ----------------------------------


def users(request: Request) -> Reply:
    """`helpful` greets and stops at the agent's answer; `quitter` hangs up at once."""
    if request.model == "quitter" or request.last_text != GREETING:
        return Reply(text="###STOP###")
    return Reply(text="Hello, I need help with my reservation.")


def write_eval(path: Path, log_dir: Path, **extra: Any) -> Path:
    data = {
        "name": "mix",
        "env": "airline",
        "agent-strategy": "oracle",
        "user-strategy": "llm",
        "user-models": ["openai/helpful", "openai/quitter"],
        # 13: transfer only (no DB change) ; 1: a cancellation the quitter never gets
        "task-ids": [13, 1],
        "num-samples": 2,
        "max-concurrency": 3,
        "data-dir": str(DATA_DIR),
        "log-dir": str(log_dir),
        **extra,
    }
    path.write_text(json.dumps(data))  # JSON is YAML
    return path


def test_tau_eval_end_to_end_and_resume(tmp_path, fake_llm: FakeLLM):  # noqa: F811
    fake_llm.brain = users
    config = write_eval(tmp_path / "eval.yaml", tmp_path / "results")
    result = CliRunner().invoke(app, ["eval", "--config", str(config), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "pass@2" in result.output and "pass^2" in result.output
    assert "openai/quitter" in result.output

    report = json.loads((tmp_path / "results" / "mix.eval.json").read_text())
    per = report["per_user_model"]
    assert per["openai/helpful"]["pass_hat_k"] == {"1": 1.0, "2": 1.0}
    assert per["openai/quitter"]["pass_hat_k"] == {"1": 0.5, "2": 0.5}
    assert per["openai/quitter"]["pass_at_k"] == {"1": 0.5, "2": 0.5}
    assert report["overall"]["pass_hat_k"] == {"1": 0.75, "2": 0.75}
    assert report["overall"]["episodes"] == 8
    spread = report["spread"]["pass_hat_1"]
    assert (spread["min_user_model"], spread["max_user_model"]) == (
        "openai/quitter",
        "openai/helpful",
    )
    assert spread["stdev"] == pytest.approx(0.5 / math.sqrt(2))
    assert report["ks"] == [1, 2] and report["num_samples"] == 2
    assert report["settings"]["agent_strategy"] == "oracle"

    folder = tmp_path / "results" / "mix"
    for model in ("openai_helpful", "openai_quitter"):
        assert (folder / f"mix__{model}.jsonl").exists()
        assert (folder / f"mix__{model}.json").exists()
    quitter = [json.loads(line) for line in (folder / "mix__openai_quitter.jsonl").open()][1:]
    assert {r["user_model"] for r in quitter} == {"openai/quitter"}
    assert {r["stop_reason"] for r in quitter} == {"user_stop"}
    calls = len(fake_llm.requests)
    assert {r.model for r in fake_llm.requests} == {"helpful", "quitter"}

    # The same eval again is refused; --resume finds everything done.
    again = CliRunner().invoke(app, ["eval", "--config", str(config), "--quiet"])
    assert again.exit_code == 2 and "pass --resume" in again.output
    resumed = CliRunner().invoke(app, ["eval", "--config", str(config), "--quiet", "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert len(fake_llm.requests) == calls
    assert (
        json.loads((tmp_path / "results" / "mix.eval.json").read_text())["overall"]
        == report["overall"]
    )


def test_tau_eval_flags_override_the_file(tmp_path, fake_llm: FakeLLM):  # noqa: F811
    fake_llm.brain = users
    config = write_eval(tmp_path / "eval.yaml", tmp_path / "results", **{"max-steps": 9})
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "--config",
            str(config),
            "--user-models",
            "openai/helpful",
            "--num-samples",
            "1",
            "--max-steps",
            "4",
            "--name",
            "solo",
            "--output",
            str(out),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["user_models"] == ["openai/helpful"] and report["ks"] == [1]
    assert report["settings"]["max_steps"] == 4
    assert report["spread"]["pass_hat_1"]["stdev"] == 0.0


def test_tau_eval_bad_file_is_one_line(tmp_path):
    path = tmp_path / "eval.yaml"
    path.write_text("user-models: [a]\nnum-samples: 0\n")
    result = CliRunner().invoke(app, ["eval", "--config", str(path)])
    assert result.exit_code == 2
    assert result.output.strip().startswith("error: num_samples")
    assert "Traceback" not in result.output


@pytest.mark.parametrize("output", ["a_dir", "a_file/report.json"])
def test_an_unusable_output_is_refused_before_any_episode_runs(tmp_path, output):
    """The report is written last: an --output that is a directory, or under a file, lost
    it (a traceback) after every episode had run."""
    (tmp_path / "a_dir").mkdir()
    (tmp_path / "a_file").write_text("x")
    config = write_eval(tmp_path / "eval.yaml", tmp_path / "logs")
    result = CliRunner().invoke(
        app, ["eval", "--config", str(config), "--output", str(tmp_path / output)]
    )
    assert result.exit_code == 2, result.output
    assert result.output.strip().startswith("error: --output") and "Traceback" not in result.output
    assert not (tmp_path / "logs").exists()


@pytest.mark.parametrize("output", ["fifo", "eval.yaml", "logs/mix/mix__openai_helpful.jsonl"])
def test_an_output_that_must_not_be_replaced_is_refused_before_any_episode_runs(tmp_path, output):
    """The report is written by an atomic rename, which replaced a device or a pipe
    itself (`--output /dev/null` as root), the eval's own config, or one of its runs'
    logs (then `--resume` found no log)."""
    os.mkfifo(tmp_path / "fifo")
    config = write_eval(tmp_path / "eval.yaml", tmp_path / "logs")
    before = config.read_text()
    result = CliRunner().invoke(
        app, ["eval", "--config", str(config), "--output", str(tmp_path / output)]
    )
    assert result.exit_code == 2, result.output
    assert result.output.strip().startswith("error: --output") and "Traceback" not in result.output
    assert result.output.count("\n") == 1
    assert not (tmp_path / "logs").exists()
    assert stat.S_ISFIFO((tmp_path / "fifo").stat().st_mode) and config.read_text() == before


def test_write_json_atomic_never_replaces_a_device_or_pipe(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError, match="not a regular file"):
        write_json_atomic(tmp_path / "fifo", {"a": 1})
    assert stat.S_ISFIFO((tmp_path / "fifo").stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]
