"""SIGTERM while `ray.init` starts a local Ray (5-30 s on a loaded machine): the run
ends with its one line and exit 143, writes nothing and leaves no Ray process behind.
Ray's own handlers used to end it with exit 15 and no line, or a native stack dump
(exit 134) and a worker process orphaned. The real `tau` console script, a real Ray."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil

from tests.conftest import DATA_DIR
from tests.tau_bench.runner.backends.refusal import DEADLINE, TAU

AUTH_ENV = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS")


def _ray_child(driver: psutil.Process) -> psutil.Process:
    """The first Ray service the driver starts (its GCS): `ray.init` is then under way,
    with seconds of its work still ahead (the raylet, the driver's core worker)."""
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        for child in driver.children(recursive=True):
            try:
                if "gcs_server" in child.name():
                    return child
            except psutil.NoSuchProcess:
                continue
        time.sleep(0.01)  # polling the process table, bounded by DEADLINE
    raise AssertionError("the run never started its Ray")


def test_sigterm_while_ray_starts_ends_the_run_in_its_line(tmp_path: Path) -> None:
    argv = [str(TAU), "run", "--env", "airline", "--agent-strategy", "oracle"]
    argv += ["--user-strategy", "scripted", "--task-ids", "0-9", "--workers", "2"]
    argv += ["--data-dir", str(DATA_DIR), "--log-dir", str(tmp_path / "r"), "--quiet"]
    env = {k: v for k, v in os.environ.items() if k not in AUTH_ENV}
    driver = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        watched = psutil.Process(driver.pid)
        _ray_child(watched)
        started = watched.children(recursive=True)  # what Ray has started so far
        driver.send_signal(signal.SIGTERM)
        _, err = driver.communicate(timeout=DEADLINE)
    finally:
        if driver.poll() is None:
            driver.kill()
    said = [line for line in err.decode().splitlines() if "Token authentication" not in line]
    assert driver.returncode == 143, err.decode()[-3000:]
    assert said == ["terminated (SIGTERM) before the run started: nothing was written"], said
    assert not (tmp_path / "r").exists()
    _, alive = psutil.wait_procs(started, timeout=DEADLINE)
    assert not alive, [p.pid for p in alive]
