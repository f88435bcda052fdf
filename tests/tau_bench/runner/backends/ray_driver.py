"""A `tau run` driver starting a local Ray, as the signal tests watch it: its command,
an environment without Ray's auth settings, and its Ray services found by name."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from tests.conftest import DATA_DIR
from tests.tau_bench.runner.backends.refusal import DEADLINE, TAU

AUTH_ENV = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS")


def env_without_auth() -> dict[str, str]:
    """This environment without Ray's auth and address settings (a run starts its own)."""
    return {k: v for k, v in os.environ.items() if k not in AUTH_ENV}


def ten_episodes_on_two_workers(log_dir: Path) -> list[str]:
    """`tau run` of 10 oracle episodes on a local Ray of 2 workers, logging in `log_dir`."""
    argv = [str(TAU), "run", "--env", "airline", "--agent-strategy", "oracle"]
    argv += ["--user-strategy", "scripted", "--task-ids", "0-9", "--workers", "2"]
    return [*argv, "--data-dir", str(DATA_DIR), "--log-dir", str(log_dir), "--quiet"]


def first_child(driver: psutil.Process, named: Callable[[str], bool], what: str) -> psutil.Process:
    """The driver's first descendant whose process name `named` accepts."""
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        for child in driver.children(recursive=True):
            try:
                if named(child.name()):
                    return child
            except psutil.NoSuchProcess:
                continue
        time.sleep(0.01)  # polling the process table, bounded by DEADLINE
    raise AssertionError(f"the run never started its {what}")
