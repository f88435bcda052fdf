"""SIGTERM (`timeout`, `docker stop`, Kubernetes) stops `tau run` as Ctrl-C does, on
both backends: the finished episodes are written (log, results, a summary with
`interrupted: true`), one line says how to continue, the exit status is 143, and no
native stack dump (Ray's) reaches the terminal. `--resume` then completes the run.

The driver is the installed console script in a subprocess, the model the fake server
in this process (slow enough that the run is still going when the signal comes)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tau_bench.benchmarks.runner.replies import respond as scripted_model
from tau_bench.fakes.openai_server import OpenAIServer
from tests.conftest import DATA_DIR

DEADLINE = 120.0  # seconds any wait may take (a loaded 2-core machine starts Ray slowly)
TAU = Path(sys.executable).parent / "tau"
TASKS = 6


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
        f"0-{TASKS - 1}",
        "--max-concurrency",
        "2",
        "--data-dir",
        str(DATA_DIR),
        "--log-dir",
        str(log_dir),
        "--run-name",
        "run",
        "--quiet",
        *extra,
    ]


def episode_keys(log: Path) -> list[tuple[int, int]]:
    if not log.exists():
        return []
    rows = [json.loads(x) for x in log.read_bytes().split(b"\n") if x.strip()]
    return [(d["task_id"], d["trial"]) for d in rows if d.get("type") == "episode"]


def wait_for(condition: Any, what: str) -> None:
    end = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.mark.parametrize("backend", [[], ["--workers", "2"]], ids=["local", "ray"])
def test_sigterm_saves_what_finished_and_resume_completes_the_run(tmp_path, backend):
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    log = tmp_path / "run.jsonl"
    with OpenAIServer(scripted_model, latency=0.2) as server:
        driver = subprocess.Popen(
            tau_run(server.base_url, tmp_path, *backend),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for(lambda: len(episode_keys(log)) >= 1, "a first finished episode")
            driver.send_signal(signal.SIGTERM)
            _, stderr = driver.communicate(timeout=DEADLINE)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait()
        assert driver.returncode == 143, stderr[-3000:]
        assert "SIGTERM received" not in stderr and "PC: @" not in stderr  # Ray's dump
        assert "Traceback" not in stderr
        last = stderr.strip().splitlines()[-1]
        assert last.startswith("terminated (SIGTERM): "), stderr[-3000:]
        assert last.endswith(f"continue with: tau run --resume {log}")
        saved = episode_keys(log)
        assert 0 < len(saved) < TASKS
        summary = json.loads((tmp_path / "run.summary.json").read_text())
        assert summary["interrupted"] is True
        assert summary["episodes_done"] == len(saved)
        assert (tmp_path / "run.json").exists()

        resumed = subprocess.run(  # locally: the log is the same on both backends
            [str(TAU), "run", "--resume", str(log), "--workers", "1", "--quiet"],
            env=env,
            capture_output=True,
            text=True,
            timeout=DEADLINE * 2,
        )
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    keys = episode_keys(log)
    assert keys[: len(saved)] == saved
    assert sorted(keys) == [(t, 0) for t in range(TASKS)]
