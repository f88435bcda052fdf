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
from pathlib import Path

import psutil

from tests.tau_bench.runner.backends.ray_driver import (
    env_without_auth,
    first_child,
    ten_episodes_on_two_workers,
)
from tests.tau_bench.runner.backends.refusal import DEADLINE


def test_local_ray_services_are_out_of_the_drivers_process_group(tmp_path: Path) -> None:
    argv = ten_episodes_on_two_workers(tmp_path / "r")
    env = env_without_auth()
    driver = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        watched = psutil.Process(driver.pid)
        # once the raylet runs, the driver's core worker registers with it
        raylet = first_child(watched, lambda name: name == "raylet", "raylet")
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
