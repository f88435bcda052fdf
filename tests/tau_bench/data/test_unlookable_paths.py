"""A data directory the system refuses to look at is one line naming where it came from.

`Path.is_dir()` is False for a missing path but raises OSError for a name longer than the
file system takes (ENAMETOOLONG); `tau run --data-dir <400 characters>` printed a
traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau_bench.data.errors import DataDirError
from tau_bench.data.paths import resolve_data_dir
from tau_bench.tau3.data import resolve_tau3_data_dir

TAU = Path(sys.executable).parent / "tau"
LONG = "d" * 400  # one name over every common file system's 255 bytes


@pytest.mark.parametrize("resolve", [resolve_data_dir, resolve_tau3_data_dir])
def test_a_name_too_long_is_a_data_dir_error(resolve) -> None:
    with pytest.raises(DataDirError) as raised:
        resolve(LONG)
    message = str(raised.value)
    assert message.startswith("--data-dir points at ddd") and "File name too long" in message
    assert LONG not in message  # cut short: the line stays readable


@pytest.mark.parametrize(
    ("resolve", "variable"),
    [(resolve_data_dir, "TAU_BENCH_DATA"), (resolve_tau3_data_dir, "TAU3_BENCH_DATA")],
)
def test_the_environment_variable_is_named(resolve, variable, monkeypatch) -> None:
    monkeypatch.setenv(variable, LONG)
    with pytest.raises(DataDirError, match=f"^{variable} points at .*File name too long"):
        resolve(None)


@pytest.mark.parametrize("env", ["airline", "tau3/retail"])
def test_tau_run_says_it_in_one_line(env: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(TAU), "run", "--env", env, "--data-dir", LONG, "--agent-strategy", "oracle"],
        cwd=tmp_path,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    # The run records the folder as an absolute path (a resume may start elsewhere).
    assert done.stderr.startswith(f"error: --data-dir points at {tmp_path}/ddd"), done.stderr
    assert len(done.stderr.splitlines()) == 1 and "File name too long" in done.stderr
