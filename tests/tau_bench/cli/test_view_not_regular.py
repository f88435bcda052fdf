"""`tau view` (and `tau compare`) given something that exists but is not a regular file
says so in one line and exits 2: a FIFO without a writer is refused, not waited on; a
directory or a device is not "no such results file"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TAU = Path(sys.executable).parent / "tau"
NOT_REGULAR = "is not a regular file (a run's results are its .jsonl log or τ-bench .json file)"


def _tau(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TAU), *map(str, args)],
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        capture_output=True,
        text=True,
        timeout=120,  # the test's own bound: a FIFO used to be waited on forever
        check=False,
    )


def _target(tmp_path: Path, kind: str) -> Path:
    if kind == "fifo":
        os.mkfifo(tmp_path / "run.jsonl")
        return tmp_path / "run.jsonl"
    if kind == "directory":
        (tmp_path / "run.jsonl").mkdir()
        return tmp_path / "run.jsonl"
    return Path("/dev/zero")


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_view_of_what_is_not_a_regular_file_is_one_line(tmp_path: Path, kind: str) -> None:
    target = _target(tmp_path, kind)
    proc = _tau("view", "--no-interactive", target)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr == f"error: {target} {NOT_REGULAR}\n"
    assert proc.stdout == ""


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_compare_of_what_is_not_a_regular_file_is_one_line(tmp_path: Path, kind: str) -> None:
    target = _target(tmp_path, kind)
    proc = _tau("compare", target)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr == f"error: {target} {NOT_REGULAR}\n"


def test_a_missing_file_is_still_no_such_file(tmp_path: Path) -> None:
    for missing in (tmp_path / "none.jsonl", tmp_path / "none" / "x.jsonl"):
        proc = _tau("view", missing)
        assert (proc.returncode, proc.stderr) == (2, f"error: no such results file: {missing}\n")
