"""SIGTERM while `ray.init` starts a local Ray (5-30 s on a loaded machine): the run
ends with its one line and exit 143, writes nothing and leaves no Ray process behind.
Ray's own handlers used to end it with exit 15 and no line, or a native stack dump
(exit 134) and a worker process orphaned. The real `tau` console script, a real Ray."""

from __future__ import annotations

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


def test_sigterm_while_ray_starts_ends_the_run_in_its_line(tmp_path: Path) -> None:
    argv = ten_episodes_on_two_workers(tmp_path / "r")
    env = env_without_auth()
    driver = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        watched = psutil.Process(driver.pid)
        # its first Ray service, the GCS: `ray.init` is then under way, with seconds of
        # its work still ahead (the raylet, the driver's core worker)
        first_child(watched, lambda name: "gcs_server" in name, "Ray")
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
