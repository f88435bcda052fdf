"""`workers` > 1: episodes in spawned processes, the parent the only writer.

Each spawned worker imports the package (~1-2 s), so these tests run few, small runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tau_adapters import registry
from tau_bench.agents.oracle import build as build_oracle
from tau_bench.cli import run_cmd
from tau_bench.config import RunConfig, load_yaml
from tau_bench.results import EpisodeRecord, read_log
from tau_bench.runner import Runner, RunOutcome, prepare_run, worker_config
from tau_bench.runner.core import worker_main
from tau_bench.runner.pool import WorkerPool
from tests.conftest import DATA_DIR

RETAIL = [f"retail/{i}" for i in range(6)]
AIRLINE = ["airline/13", "airline/0", "airline/1", "airline/2"]
# Summary figures that do not depend on timing or file names.
SUMMARY_KEYS = (
    "episodes_planned",
    "episodes_done",
    "episodes_scored",
    "episodes_missing",
    "errors",
    "error_kinds",
    "tasks",
    "successes",
    "stop_reasons",
    "by_domain",
    "avg_reward",
    "pass_hat_k",
    "num_trials",
)


def make_config(tmp_path: Path, **kw: Any) -> RunConfig:
    base: dict[str, Any] = dict(
        agent_strategy="oracle",
        user_strategy="scripted",
        num_trials=2,
        max_concurrency=4,
        log_dir=str(tmp_path),
        data_dir=str(DATA_DIR),
        quiet=True,
    )
    base.update(kw)
    return RunConfig(**base)


async def run_config(config: RunConfig) -> RunOutcome:
    return await Runner(prepare_run(config)).run()


def essentials(records: list[EpisodeRecord]) -> list[tuple[Any, ...]]:
    return [(r.task_id, r.trial, r.reward, r.stop_reason, r.error) for r in records]


def log_keys(path: Path) -> list[tuple[Any, int]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [(d["task_id"], d["trial"]) for d in lines if d.get("type") == "episode"]


@pytest.mark.parametrize(
    ("env", "task_ids"),
    [("retail", list(range(6))), ("retail,airline", RETAIL + AIRLINE)],
)
async def test_two_workers_give_the_same_records_and_summary(tmp_path, env, task_ids):
    one = await run_config(make_config(tmp_path, env=env, task_ids=task_ids, run_name="one"))
    two = await run_config(
        make_config(tmp_path, env=env, task_ids=task_ids, run_name="two", workers=2)
    )
    assert len(one.records) == len(task_ids) * 2
    assert essentials(two.records) == essentials(one.records)
    assert {k: two.summary.get(k) for k in SUMMARY_KEYS} == {
        k: one.summary.get(k) for k in SUMMARY_KEYS
    }
    assert one.summary["avg_reward"] is not None
    assert two.ran == len(task_ids) * 2 and "worker_errors" not in two.summary
    # The parent wrote every file, in the usual formats.
    assert sorted(log_keys(tmp_path / "two.jsonl"), key=str) == sorted(
        log_keys(tmp_path / "one.jsonl"), key=str
    )
    results = json.loads((tmp_path / "two.json").read_text())
    assert len(results) == len(task_ids) * 2
    header = read_log(tmp_path / "two.jsonl").header
    assert header["config"]["workers"] == 2 and "workers" not in header["fingerprint"]


async def test_resume_with_two_workers_runs_only_the_missing_episodes(tmp_path):
    ids = RETAIL[:3] + AIRLINE[:2]
    full = await run_config(make_config(tmp_path, env="retail,airline", task_ids=ids, run_name="r"))
    log = tmp_path / "r.jsonl"
    lines = log.read_text().splitlines()
    kept = lines[:4]  # the header and three episodes
    log.write_text("\n".join(kept) + "\n")
    done = {(json.loads(x)["task_id"], json.loads(x)["trial"]) for x in kept[1:]}

    resumed = await run_config(
        make_config(tmp_path, env="retail,airline", task_ids=ids, resume=str(log), workers=2)
    )
    assert resumed.ran == len(ids) * 2 - 3
    assert essentials(resumed.records) == essentials(full.records)
    keys = log_keys(log)
    assert len(keys) == len(set(keys)) == len(ids) * 2  # nothing ran twice
    assert set(keys[:3]) == done


async def test_a_dead_worker_loses_only_its_own_episodes(tmp_path):
    config = make_config(tmp_path, env="airline", task_ids=[13, 0, 1], workers=2)
    plan = prepare_run(config)
    pool = WorkerPool(config, plan.pending, target=worker_main)
    stored: list[dict[str, Any]] = []
    pool.start()
    try:
        pool._procs[1].kill()  # long before it has imported anything
        await pool.collect(stored.append)
    finally:
        pool.stop()
    assert sorted((d["task_id"], d["trial"]) for d in stored) == sorted(pool.shares[0])
    assert pool.errors == [
        f"worker 1 exited with code -9; {len(pool.shares[1])} of its episodes not run "
        "(--resume runs them)"
    ]


async def test_a_failing_worker_reports_why(tmp_path):
    config = make_config(tmp_path, env="airline", task_ids=[13, 0], workers=2)
    keys = [(13, 0), (999, 0), (0, 0), (0, 1)]  # worker 1 gets a task id it cannot find
    pool = WorkerPool(config, keys, target=worker_main)
    stored: list[dict[str, Any]] = []
    try:
        await pool.run(stored.append)
    finally:
        pool.stop()
    assert {(d["task_id"], d["trial"]) for d in stored} >= {(13, 0), (0, 0)}
    assert len(pool.errors) == 1
    assert pool.errors[0].startswith("worker 1 failed: KeyError")


def test_worker_config_shares_concurrency_and_limits(tmp_path):
    config = make_config(
        tmp_path, max_concurrency=5, provider_limits={"openai": 3, "decibel": 1}, workers=2
    )
    data = worker_config(config, 2)
    assert data["max_concurrency"] == 3 and data["workers"] == 1
    assert data["provider_limits"] == {"openai": 2, "decibel": 1}
    assert config.fingerprint() == make_config(tmp_path, workers=1).fingerprint()


def parse(monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[RunConfig | None, Any]:
    seen: list[RunConfig] = []
    monkeypatch.setattr(run_cmd, "_execute", seen.append)
    result = CliRunner().invoke(run_cmd.standalone_app(), list(args))
    return (seen[0] if seen else None), result


@pytest.mark.parametrize("args", [["--workers", "2"], ["--workers=2"]])
def test_workers_flag_parses(monkeypatch, args):
    cfg, result = parse(monkeypatch, "--env", "airline", *args)
    assert result.exit_code == 0, result.output
    assert cfg is not None and cfg.workers == 2
    default, _ = parse(monkeypatch, "--env", "airline")
    assert default is not None and default.workers == 1


def test_workers_in_yaml_and_bad_values(monkeypatch, tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("workers: 3\nenv: airline\n")
    assert load_yaml(path)["workers"] == 3
    cfg, result = parse(monkeypatch, "--config", str(path))
    assert result.exit_code == 0 and cfg is not None and cfg.workers == 3
    _, bad = parse(monkeypatch, "--workers", "0")
    assert bad.exit_code == 2 and "workers" in bad.output


def test_in_process_strategy_with_workers_fails_fast(tmp_path):
    registry.register("oracle-in-process", build_oracle)
    try:
        result = CliRunner().invoke(
            run_cmd.standalone_app(),
            [
                "--env",
                "airline",
                "--agent-strategy",
                "oracle-in-process",
                "--user-strategy",
                "scripted",
                "--task-ids",
                "13",
                "--workers",
                "2",
                "--log-dir",
                str(tmp_path),
                "--data-dir",
                str(DATA_DIR),
            ],
        )
    finally:
        registry._extra.pop("oracle-in-process", None)
    assert result.exit_code == 2, result.output
    assert "registered in this process only" in result.output
    assert "workers=1" in result.output
    assert list(tmp_path.iterdir()) == []  # nothing written
