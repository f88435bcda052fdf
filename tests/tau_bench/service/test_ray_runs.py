"""`tau serve --backend ray --workers 2 --max-runs 2`: two runs at once on the server's
local Ray both complete (the Ray has CPUs for both runs' workers, and the first run to
end does not stop it under the other), the Ray stops with the server, and SIGTERM still
stops the server gracefully once Ray has started. `tau serve` starts its Ray before it
answers (not on its event loop at the first run), and a cluster it cannot reach is one
line at start-up."""

from __future__ import annotations

import asyncio
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import psutil
import ray

from tau_bench.runner.backends import ray as ray_backend
from tests.conftest import DATA_DIR
from tests.tau_bench.service.conftest import (
    ORACLE,
    WAIT,
    finished,
    make_settings,
    running_app,
    submit,
)

TAU = Path(sys.executable).parent / "tau"


async def test_two_runs_at_once_on_the_servers_ray_both_complete(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(ray_backend, "START_DEADLINE", 60.0)  # else a stuck run waits 300 s
    settings = make_settings(tmp_path / "state", backend="ray", workers=2, max_runs=2)
    assert not ray.is_initialized()
    async with running_app(settings) as client:
        body = {"task_ids": [0, 1, 2, 3], "num_trials": 2, "max_concurrency": 4}
        runs = [await submit(client, **body) for _ in range(2)]
        views = await asyncio.gather(*(finished(client, run) for run in runs))
        for view in views:
            assert view["status"] == "completed", view
            assert view["progress"]["done"] == view["progress"]["scored"] == 8
        assert ray.is_initialized()  # kept for the server's next runs
    assert not ray.is_initialized()  # stopped with the server


def _ray_processes(pid: int) -> list[str]:
    """The names of Ray's own processes among `pid`'s descendants."""
    names = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            names.append(child.name())
        except psutil.NoSuchProcess:
            continue
    return [n for n in names if n in ("gcs_server", "raylet")]


def test_sigterm_stops_the_server_gracefully_after_a_ray_run(tmp_path: Path) -> None:
    """The server's Ray is up once it answers, before any run: `ray.init` takes seconds,
    and on the event loop at the first run it stalled every request. And `ray.init` puts
    in a SIGTERM handler that exits at once; the server keeps its own (uvicorn's graceful
    shutdown: open requests answered, runs parked, exit 0)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [str(TAU), "serve", "--no-auth", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--backend", "ray", "--workers", "2", "--state-dir", str(tmp_path / "state")]
    env = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(x) for x in proc.stderr or []])
    reader.start()
    seen: list[str] = []
    try:
        while not any("Uvicorn running on" in s for s in seen):
            seen.append(lines.get(timeout=WAIT))  # queue.Empty if it never starts
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{base}/health", timeout=WAIT).status_code == 200
        ray_up = _ray_processes(proc.pid)  # no run yet: started with the server
        assert sorted(set(ray_up)) == ["gcs_server", "raylet"], ray_up
        body = {**ORACLE, "task_ids": [0, 1]}
        run = httpx.post(f"{base}/runs", json=body, timeout=WAIT).json()["run_id"]
        view = httpx.get(f"{base}/runs/{run}", params={"wait": WAIT}, timeout=WAIT + 10).json()
        assert view["status"] == "completed", view  # its workers ran: Ray is up
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=WAIT)
        reader.join(timeout=WAIT)
    while not lines.empty():
        seen.append(lines.get())
    assert code in (0, -signal.SIGTERM), "".join(seen)[-3000:]
    assert any("Application shutdown complete" in s for s in seen), "".join(seen)[-3000:]
    assert not any("Traceback" in s or "SystemExit" in s for s in seen), "".join(seen)[-3000:]


def test_a_cluster_it_cannot_reach_stops_tau_serve_at_start_up(tmp_path: Path) -> None:
    """One line and exit 2 before the server listens, not a server whose every run fails."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there once the probe is closed
    argv = [str(TAU), "serve", "--no-auth", "--host", "127.0.0.1", "--port", "0"]
    argv += ["--ray-address", f"127.0.0.1:{port}", "--state-dir", str(tmp_path / "state")]
    env = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=WAIT)
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr[-3000:]
    # the address as Ray dials it (a loopback host becomes this node's IP)
    assert re.fullmatch(
        rf"error: --backend ray: cannot start or reach the Ray cluster at 127\.0\.0\.1:{port}: "
        rf"nothing accepts connections at \S+:{port}"
        rf"(, the address Ray dials for 127\.0\.0\.1:{port})? \(Connection refused; waited at most "
        r"10 s\)",
        errors[0],
    ), errors
    assert "Traceback" not in proc.stderr and "Uvicorn running" not in proc.stderr
