"""`tau env exec` as users run it (the installed script): a line that does not decode is
one `error: line N: ...` and exit 2, on v1 and τ³ domains alike, never a traceback."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import DATA_DIR, TAU3_DATA_DIR

TAU = str(Path(__file__).resolve().parents[3] / ".venv" / "bin" / "tau")
ENVS = ["retail", "tau3/mock"]


def _exec(env: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TAU, "env", "exec", "--env", env],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "TAU3_BENCH_DATA": str(TAU3_DATA_DIR)},
    )


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    return line


@pytest.mark.parametrize("env", ENVS)
@pytest.mark.parametrize("depth", [900, 100_000])
def test_deep_json_is_one_line(env: str, depth: int) -> None:
    ok = '{"reset": true}\n'
    line = '{"name": "get_users", "kwargs": {"x": ' + "[" * depth + "]" * depth + "}}\n"
    proc = _exec(env, ok + line)
    assert _one_error_line(proc) == "error: line 2: JSON nested deeper than 100 levels"


@pytest.mark.parametrize("env", ENVS)
def test_a_bare_deep_array_is_one_line(env: str) -> None:
    proc = _exec(env, "[" * 100_000 + "]" * 100_000 + "\n")
    assert _one_error_line(proc) == "error: line 1: JSON nested deeper than 100 levels"


@pytest.mark.parametrize("env", ENVS)
def test_an_integer_too_long_to_read_is_one_line(env: str) -> None:
    line = '{"name": "calculate", "kwargs": {"expression": ' + "9" * 5000 + "}}\n"
    proc = _exec(env, "\n" + line)
    assert _one_error_line(proc) == (
        "error: line 2: a number has more than 4300 digits (too long to read)"
    )


@pytest.mark.parametrize("env", ENVS)
def test_bad_json_is_still_one_line(env: str) -> None:
    proc = _exec(env, "{nope\n")
    assert _one_error_line(proc).startswith("error: line 1: not JSON (")


def test_help_names_the_tau3_domains() -> None:
    proc = subprocess.run(
        [TAU, "env", "exec", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "300"},
    )
    assert proc.returncode == 0
    assert "airline, retail, or a τ³ domain (tau3/airline" in proc.stdout
