"""A resumed run's summary says the run name its config was given, as an uninterrupted
run's does (the installed console script; the run cut short by truncating its log)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA_DIR

TAU = Path(sys.executable).parent / "tau"
OFFLINE = ["--env", "retail", "--agent-strategy", "oracle", "--user-strategy", "scripted"]


def _tau(*args: str, cwd: Path) -> None:
    env = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR)}
    done = subprocess.run(
        [str(TAU), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=cwd,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("named", "again"),
    [(["--run-name", "full"], []), ([], ["--run-name", "other"])],
    ids=["named-plain-resume", "unnamed-resume-naming-another"],
)
def test_a_resumed_run_keeps_its_config_run_name(
    tmp_path: Path, named: list[str], again: list[str]
) -> None:
    _tau("run", *OFFLINE, "--task-ids", "0-2", "--log-dir", "logs", *named, cwd=tmp_path)
    (log,) = (tmp_path / "logs").glob("*.jsonl")
    summary_path = log.with_suffix(".summary.json")
    whole = json.loads(summary_path.read_text())
    assert whole["config"]["run_name"] == (named[1] if named else None)
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:2]))  # the header and one episode: the others run again
    summary_path.unlink()
    _tau("run", "--resume", str(log), *again, cwd=tmp_path)
    resumed = json.loads(summary_path.read_text())
    assert resumed["run_name"] == whole["run_name"] == log.stem
    assert resumed["config"]["run_name"] == whole["config"]["run_name"]
    assert resumed["episodes_run_now"] == 2
