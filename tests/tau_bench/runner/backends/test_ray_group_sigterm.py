"""SIGTERM to the driver's whole process group (`timeout`, `kill -- -PGID`, a shell's job
control) while `ray.init` starts a local Ray. The local Ray's services used to share the
driver's process group: the raylet died with the driver's signal while the driver's
core worker was registering with it, and the driver ended with Ray's native
`Failed to register worker to Raylet` line and exit 1, its worker processes left
running for a while. They get a process group of their own (as Ray gives them on
Windows); the driver ends with its one line and exit 143, as when only it is signalled
(test_ray_start_sigterm.py). The real `tau` console script, a real Ray."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil

from tests.conftest import DATA_DIR
from tests.tau_bench.runner.backends.refusal import DEADLINE, TAU
from tests.tau_bench.runner.backends.test_ray_start_sigterm import AUTH_ENV


def _raylet(driver: psutil.Process) -> psutil.Process:
    """The driver's raylet: once it runs, the driver's core worker registers with it."""
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        for child in driver.children(recursive=True):
            try:
                if child.name() == "raylet":
                    return child
            except psutil.NoSuchProcess:
                continue
        time.sleep(0.01)  # polling the process table, bounded by DEADLINE
    raise AssertionError("the run never started its raylet")


def test_local_ray_services_are_out_of_the_drivers_process_group(tmp_path: Path) -> None:
    argv = [str(TAU), "run", "--env", "airline", "--agent-strategy", "oracle"]
    argv += ["--user-strategy", "scripted", "--task-ids", "0-9", "--workers", "2"]
    argv += ["--data-dir", str(DATA_DIR), "--log-dir", str(tmp_path / "r"), "--quiet"]
    env = {k: v for k, v in os.environ.items() if k not in AUTH_ENV}
    driver = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        watched = psutil.Process(driver.pid)
        raylet = _raylet(watched)
        services = [p for p in watched.children(recursive=True) if p.pid != raylet.pid]
        services.append(raylet)
        in_group = []
        for proc in services:
            try:
                if os.getpgid(proc.pid) == driver.pid:
                    in_group.append(proc.name())
            except ProcessLookupError:
                continue
        os.killpg(driver.pid, signal.SIGTERM)  # as `timeout` signals its command
        _, err = driver.communicate(timeout=DEADLINE)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
    assert in_group == [], in_group
    said = [line for line in err.decode().splitlines() if "Token authentication" not in line]
    assert driver.returncode == 143, err.decode()[-3000:]
    assert said == ["terminated (SIGTERM) before the run started: nothing was written"], said
    assert not (tmp_path / "r").exists()
    started = [p for p in services if p.is_running()]
    _, alive = psutil.wait_procs(started, timeout=DEADLINE)
    assert not alive, [p.pid for p in alive]
