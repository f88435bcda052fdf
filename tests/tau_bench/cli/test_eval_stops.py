"""SIGTERM (`timeout`, `docker stop`, Kubernetes) stops `tau eval` as Ctrl-C does, on
both backends: every user model's run writes what finished, the report is written with
`interrupted: true`, one line says how to continue, the exit status is 143 (130 for
Ctrl-C), and no native stack dump (Ray's) reaches the terminal. The command that line
gives then completes every run, each (task, sample) once.

The driver is the installed console script in a subprocess, the models (agent and users)
the fake OpenAI server in this process, slow enough that the eval is still going when
the signal comes."""

from __future__ import annotations

import json
import os
import shlex
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

DEADLINE = 120.0  # seconds any wait may take (a loaded 2-core machine is slow)
TAU = Path(sys.executable).parent / "tau"
TASKS = 4
USER_MODELS = ["openai/user-a", "openai/user-b"]
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def write_eval(path: Path, base_url: str) -> Path:
    data = {
        "name": "stop",
        "env": "airline",
        "agent-strategy": "tool-calling",
        "model": "openai/gpt-4o-mini",
        "api-base": base_url,
        "user-strategy": "llm",
        "user-api-base": base_url,
        "user-models": USER_MODELS,
        "task-ids": f"0-{TASKS - 1}",
        "num-samples": 1,
        "max-concurrency": 2,
        "data-dir": str(DATA_DIR),
        "log-dir": str(path.parent / "results"),
    }
    path.write_text(json.dumps(data))  # JSON is YAML
    return path


def logs(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "results" / "stop"
    return [folder / f"stop__{m.replace('/', '_')}.jsonl" for m in USER_MODELS]


def episode_keys(log: Path) -> list[tuple[int, int]]:
    """The episodes of the log's whole lines (a line being written is not read)."""
    if not log.exists():
        return []
    lines = log.read_bytes().split(b"\n")[:-1]
    rows = [json.loads(line) for line in lines if line.strip()]
    return [(d["task_id"], d["trial"]) for d in rows if d.get("type") == "episode"]


def wait_for(condition: Any, what: str) -> None:
    end = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("sig", "code", "how", "backend"),
    [
        (signal.SIGTERM, 143, "terminated (SIGTERM): ", []),
        (signal.SIGINT, 130, "interrupted: ", []),
        (signal.SIGTERM, 143, "terminated (SIGTERM): ", ["--workers", "2"]),
    ],
    ids=["sigterm", "ctrl-c", "sigterm-ray"],
)
def test_a_stopped_eval_saves_what_finished_and_resume_completes_it(
    tmp_path, sig, code, how, backend
):
    with OpenAIServer(scripted_model, latency=0.2) as server:
        config = write_eval(tmp_path / "eval.yaml", server.base_url)
        driver = subprocess.Popen(
            [str(TAU), "eval", "--config", str(config), "--quiet", *backend],
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for(lambda: any(episode_keys(log) for log in logs(tmp_path)), "an episode")
            driver.send_signal(sig)
            _, stderr = driver.communicate(timeout=DEADLINE)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait()
        assert driver.returncode == code, stderr[-3000:]
        assert "Traceback" not in stderr
        assert "SIGTERM received" not in stderr and "PC: @" not in stderr  # Ray's dump
        lines = stderr.strip().splitlines()
        if backend:  # Ray's own start-up notes come first
            lines = lines[-1:]
        assert len(lines) == 1 and lines[0].startswith(how), stderr[-3000:]
        again = shlex.join(["tau", "eval", "--config", str(config), *backend, "--resume"])
        assert lines[0].endswith(f"continue with: {again}")
        saved = {log: episode_keys(log) for log in logs(tmp_path)}
        done = sum(len(keys) for keys in saved.values())
        assert 0 < done < TASKS * len(USER_MODELS)
        assert f": {done} of {TASKS * len(USER_MODELS)} episodes saved in " in lines[0]
        report = json.loads((tmp_path / "results" / "stop.eval.json").read_text())
        assert report["interrupted"] is True
        assert report["overall"]["episodes"] == done

        resumed = subprocess.run(  # the command the line gave, as a user runs it
            [str(TAU), *shlex.split(again)[1:], "--quiet"],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=DEADLINE * 2,
        )
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    for log, before in saved.items():
        keys = episode_keys(log)
        assert keys[: len(before)] == before  # what was saved is still there
        assert sorted(keys) == [(t, 0) for t in range(TASKS)]  # each once: none lost or twice
    report = json.loads((tmp_path / "results" / "stop.eval.json").read_text())
    assert report["interrupted"] is False
    assert report["overall"]["episodes"] == TASKS * len(USER_MODELS)
