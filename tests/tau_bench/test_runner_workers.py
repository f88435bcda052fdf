"""The Ray backend (`--backend ray`, `--workers N`): episodes on Ray workers, the driver
the only writer.

One small local Ray (2 CPUs) serves the in-process tests of this module; the runner
joins it rather than starting its own. Killing the driver is tested with a real `tau
run` subprocess in tests/tau_bench/test_runner_ray_driver.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
import ray
from typer.testing import CliRunner

from tau_adapters import registry
from tau_bench.agents.oracle import build as build_oracle
from tau_bench.benchmarks.runner.replies import respond as scripted_model
from tau_bench.cli import run_cmd
from tau_bench.config import RunConfig, load_yaml
from tau_bench.fakes.openai_server import ChatReply, ChatRequest, OpenAIServer
from tau_bench.records import EpisodeRecord
from tau_bench.results_log import read_log
from tau_bench.runner import Runner, RunOutcome, prepare_run, worker_config
from tests.conftest import DATA_DIR

RETAIL = [f"retail/{i}" for i in range(6)]
AIRLINE = ["airline/13", "airline/0", "airline/1", "airline/2"]
DEADLINE = 60.0  # seconds any wait of these tests may take
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


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One 2-CPU local Ray for the module (runs join it), stopped at the end."""
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


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


def llm_config(tmp_path: Path, base_url: str, **kw: Any) -> RunConfig:
    """The real tool-calling agent and LLM user against the fake server."""
    return make_config(
        tmp_path,
        env="airline",
        agent_strategy="tool-calling",
        model="openai/gpt-4o-mini",
        api_base=base_url,
        user_strategy="llm",
        user_model="openai/gpt-4o-mini",
        user_api_base=base_url,
        **kw,
    )


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
    # The driver wrote every file, in the usual formats.
    assert sorted(log_keys(tmp_path / "two.jsonl"), key=str) == sorted(
        log_keys(tmp_path / "one.jsonl"), key=str
    )
    results = json.loads((tmp_path / "two.json").read_text())
    assert len(results) == len(task_ids) * 2
    header = read_log(tmp_path / "two.jsonl").header
    assert header["config"]["workers"] == 2 and "workers" not in header["fingerprint"]
    assert "backend" not in header["fingerprint"]


async def test_resume_across_backends_runs_only_the_missing_episodes(tmp_path):
    ids = RETAIL[:3] + AIRLINE[:2]
    full = await run_config(make_config(tmp_path, env="retail,airline", task_ids=ids, run_name="r"))
    log = tmp_path / "r.jsonl"
    lines = log.read_text().splitlines()
    kept = lines[:4]  # the header and three episodes, written by the local backend
    log.write_text("\n".join(kept) + "\n")
    done = {(json.loads(x)["task_id"], json.loads(x)["trial"]) for x in kept[1:]}

    resumed = await run_config(
        make_config(tmp_path, env="retail,airline", task_ids=ids, resume=str(log), backend="ray")
    )
    assert resumed.ran == len(ids) * 2 - 3
    assert essentials(resumed.records) == essentials(full.records)
    keys = log_keys(log)
    assert len(keys) == len(set(keys)) == len(ids) * 2  # nothing ran twice
    assert set(keys[:3]) == done


def episode_workers() -> list[psutil.Process]:
    """The Ray episode-worker processes alive on this machine."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = " ".join(proc.info.get("cmdline") or [])
        if "EpisodeWorker" in cmd:
            found.append(proc)
    return found


async def wait_until(condition: Any, what: str) -> None:
    """Poll `condition()` until true; fail after DEADLINE seconds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + DEADLINE
    while not condition():
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def test_a_killed_worker_has_its_episodes_rerun_and_nothing_duplicated(tmp_path):
    with OpenAIServer(scripted_model, latency=0.2) as server:
        reference = await run_config(
            llm_config(tmp_path, server.base_url, task_ids=[0, 1, 2, 3], run_name="ref")
        )
        config = llm_config(
            tmp_path, server.base_url, task_ids=[0, 1, 2, 3], run_name="ray", workers=2
        )
        before = server.stats()["requests"]
        run = asyncio.ensure_future(run_config(config))
        # Mid-run: both workers are up and model calls are under way.
        await wait_until(
            lambda: len(episode_workers()) == 2 and server.stats()["requests"] >= before + 4,
            "two workers calling the model",
        )
        victim = episode_workers()[0]
        os.kill(victim.pid, signal.SIGKILL)
        outcome = await asyncio.wait_for(run, DEADLINE)
    assert not victim.is_running()
    assert "worker_errors" not in outcome.summary
    keys = log_keys(tmp_path / "ray.jsonl")
    assert len(keys) == len(set(keys)) == 8  # every episode once: re-run, not duplicated
    assert essentials(outcome.records) == essentials(reference.records)
    assert outcome.summary["errors"] == 0
    assert [r.user_usage for r in outcome.records] == [r.user_usage for r in reference.records]
    assert [r.agent_usage for r in outcome.records] == [r.agent_usage for r in reference.records]


async def test_provider_limit_holds_cluster_wide(tmp_path):
    live = 0
    peak = 0

    async def counting(request: ChatRequest) -> ChatReply:
        nonlocal live, peak
        live += 1
        peak = max(peak, live)
        try:
            await asyncio.sleep(0.05)  # the model's time, during which the slot is held
            return scripted_model(request)
        finally:
            live -= 1

    with OpenAIServer(counting, latency=0.0) as server:
        outcome = await run_config(
            llm_config(
                tmp_path,
                server.base_url,
                task_ids=[0, 1, 2, 3],
                workers=2,
                max_concurrency=8,
                provider_limits={"openai": 2},
            )
        )
    assert outcome.summary["errors"] == 0 and len(outcome.records) == 8
    # Two workers with 4 episodes each: per-worker caps would let 4 calls through.
    assert peak == 2


def test_worker_config_shares_concurrency_not_limits(tmp_path):
    config = make_config(
        tmp_path, max_concurrency=5, provider_limits={"openai": 3, "decibel": 1}, workers=2
    )
    data = worker_config(config, 2)
    assert data["max_concurrency"] == 3 and data["workers"] == 1 and data["backend"] == "local"
    assert data["provider_limits"] == {"openai": 3, "decibel": 1}  # one limiter for all
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
    assert default is not None and default.workers == 1 and default.backend == "local"


def test_backend_flags_parse(monkeypatch):
    cfg, result = parse(
        monkeypatch,
        "--env",
        "airline",
        "--backend",
        "ray",
        "--ray-address",
        "ray://head:10001",
        "--llm-path",
        "direct",
    )
    assert result.exit_code == 0, result.output
    assert cfg is not None
    assert (cfg.backend, cfg.ray_address, cfg.llm_path) == ("ray", "ray://head:10001", "direct")
    _, bad = parse(monkeypatch, "--env", "airline", "--backend", "spark")
    assert bad.exit_code == 2 and "backend" in bad.output
    _, bad = parse(monkeypatch, "--env", "airline", "--llm-path", "fast")
    assert bad.exit_code == 2 and "llm_path" in bad.output


def test_workers_and_backend_in_yaml_and_bad_values(monkeypatch, tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("workers: 3\nbackend: ray\nllm_path: litellm\nenv: airline\n")
    assert load_yaml(path)["workers"] == 3
    cfg, result = parse(monkeypatch, "--config", str(path))
    assert result.exit_code == 0 and cfg is not None
    assert (cfg.workers, cfg.backend, cfg.llm_path) == (3, "ray", "litellm")
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


def test_without_the_ray_extra_the_backend_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    result = CliRunner().invoke(
        run_cmd.standalone_app(),
        [
            "--env",
            "airline",
            "--agent-strategy",
            "oracle",
            "--user-strategy",
            "scripted",
            "--task-ids",
            "13",
            "--backend",
            "ray",
            "--log-dir",
            str(tmp_path),
            "--data-dir",
            str(DATA_DIR),
        ],
    )
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "pip install 'tau-adapters[ray]'" in lines[0]
    assert "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []  # nothing written
