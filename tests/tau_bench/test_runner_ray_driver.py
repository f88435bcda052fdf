"""Workers die with the driver: `tau run --workers 2` (a local Ray) killed with SIGKILL
leaves nothing running, and `--resume` then gives the uninterrupted run's results.

The driver is the installed console script in a subprocess, the model the fake server
in this process, so a worker left behind would show up as requests still arriving.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from tau_bench.benchmarks.runner.replies import respond as scripted_model
from tau_bench.fakes.openai_server import OpenAIServer
from tests.conftest import DATA_DIR

DEADLINE = 120.0  # seconds any wait may take (a loaded 2-core machine starts Ray slowly)
TAU = Path(sys.executable).parent / "tau"


def tau_run(base_url: str, log_dir: Path, *extra: str) -> list[str]:
    return [
        str(TAU),
        "run",
        "--env",
        "airline",
        "--agent-strategy",
        "tool-calling",
        "--model",
        "openai/gpt-4o-mini",
        "--api-base",
        base_url,
        "--user-strategy",
        "llm",
        "--user-model",
        "openai/gpt-4o-mini",
        "--user-api-base",
        base_url,
        "--task-ids",
        "0",
        "1",
        "2",
        "3",
        "4",
        "5",
        "--max-concurrency",
        "2",
        "--data-dir",
        str(DATA_DIR),
        "--log-dir",
        str(log_dir),
        "--quiet",
        *extra,
    ]


def episodes(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    return [d for d in lines if d.get("type") == "episode"]


def wait_for(condition: Any, what: str) -> None:
    end = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def essentials(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    keyed = sorted(rows, key=lambda d: (d["trial"], d["task_id"]))
    return [
        (d["task_id"], d["trial"], d["reward"], d.get("error"), d.get("agent_usage")) for d in keyed
    ]


def test_killed_driver_leaves_nothing_running_and_resume_is_identical(tmp_path):
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with OpenAIServer(scripted_model, latency=0.3) as server:
        reference = subprocess.run(
            tau_run(server.base_url, tmp_path / "ref", "--run-name", "ref"),
            env=env,
            capture_output=True,
            text=True,
            timeout=DEADLINE,
        )
        assert reference.returncode == 0, reference.stderr[-2000:]

        log = tmp_path / "ray" / "run.jsonl"
        driver = subprocess.Popen(
            tau_run(server.base_url, tmp_path / "ray", "--run-name", "run", "--workers", "2"),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for(lambda: len(episodes(log)) >= 1, "a first finished episode")
            family = psutil.Process(driver.pid).children(recursive=True)
            assert any("EpisodeWorker" in " ".join(p.cmdline()) for p in family)
            driver.send_signal(signal.SIGKILL)
            driver.wait(timeout=DEADLINE)
            # Every process the driver started (Ray's head, its workers) goes too.
            _, alive = psutil.wait_procs(family, timeout=DEADLINE)
            assert alive == [], [" ".join(p.cmdline())[:120] for p in alive]
            calls = server.stats()["requests"]
        finally:
            if driver.poll() is None:
                driver.kill()
        assert len(episodes(log)) < 6  # it was killed mid-run
        assert server.stats()["requests"] == calls  # nobody is still calling the bot

        resumed = subprocess.run(
            [str(TAU), "run", "--resume", str(log), "--workers", "2", "--quiet"],
            env=env,
            capture_output=True,
            text=True,
            timeout=DEADLINE * 2,
        )
        assert resumed.returncode == 0, resumed.stderr[-2000:]
    rows = episodes(log)
    keys = [(d["task_id"], d["trial"]) for d in rows]
    assert len(keys) == len(set(keys)) == 6
    assert essentials(rows) == essentials(episodes(tmp_path / "ref" / "ref.jsonl"))
