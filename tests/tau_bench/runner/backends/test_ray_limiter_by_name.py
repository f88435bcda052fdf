"""`--provider-limit` on Ray: the workers find the run's limiter actor by its name. Its
handle among their constructor's arguments (they are restartable) had Ray print a native
error line on every such run: `core_worker.cc:...: Actor with class name: 'EpisodeWorker'
... has constructor arguments in the object store and max_restarts > 0 ...`. The real
`tau` console script, a real Ray; a limit named after the agent strategy, so every
episode takes its slot from the limiter on a worker."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import DATA_DIR
from tests.tau_bench.runner.backends.ray_driver import env_without_auth
from tests.tau_bench.runner.backends.refusal import DEADLINE, TAU


def test_a_limited_ray_run_prints_no_native_error(tmp_path: Path) -> None:
    argv = [str(TAU), "run", "--env", "airline", "--agent-strategy", "oracle"]
    argv += ["--user-strategy", "scripted", "--task-ids", "0-3", "--num-trials", "2"]
    argv += ["--backend", "ray", "--workers", "1", "--max-concurrency", "4"]
    argv += ["--provider-limit", "oracle=1", "--provider-limit", "openai=2"]
    argv += ["--data-dir", str(DATA_DIR), "--log-dir", str(tmp_path / "r"), "--quiet"]
    env = env_without_auth()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=DEADLINE)
    assert done.returncode == 0, done.stderr[-3000:]
    said = [line for line in done.stderr.splitlines() if "Token authentication" not in line]
    assert said == [], said
    (log,) = (tmp_path / "r").glob("*.jsonl")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    keys = sorted((r["task_id"], r["trial"]) for r in records if "task_id" in r)
    assert keys == [(t, k) for t in range(4) for k in (0, 1)]
