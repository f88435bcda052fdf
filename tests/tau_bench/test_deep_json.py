"""JSON nested 10,000 levels deep is one clean error in v1's `Env.execute` and in the
installed `tau env exec`, never a RecursionError or a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tau_bench.domains import load_domain

from ..conftest import DATA_DIR

DEPTH = 10_000


def deep_value(depth: int = DEPTH) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def test_env_execute_refuses_deep_arguments() -> None:
    env = load_domain("retail", DATA_DIR).new_env()
    before = env.data_hash()
    output = env.execute("get_user_details", {"user_id": deep_value()})
    assert output.is_error and "nested deeper than 100 levels" in output.content
    assert env.data_hash() == before
    assert env.actions[-1].kwargs == {"__invalid_kwargs__": "too deep"}


def test_tau_env_exec_deep_line_is_one_clear_error() -> None:
    tau = Path(sys.executable).parent / "tau"
    line = '{"name": "get_user_details", "kwargs": ' + "[" * DEPTH + "]" * DEPTH + "}\n"
    proc = subprocess.run(
        [str(tau), "env", "exec", "--env", "retail"],
        input=line,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TAU_BENCH_DATA": str(DATA_DIR)},
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == ["error: line 1: JSON nested deeper than 100 levels"]
