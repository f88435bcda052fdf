"""The installed `tau run` on one airline task, expected to refuse its flags in one line."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from tests.conftest import DATA_DIR

TAU = Path(sys.executable).parent / "tau"
DEADLINE = 120.0  # the subprocess: Python's and Ray's imports on a loaded machine


def tau_run_refusal(tmp_path: Path, *flags: str, env: Mapping[str, str] | None = None) -> str:
    """The one `error:` line of `tau run ... FLAGS` (in `env`, else this process's),
    after checking it exited with 2, printed no traceback and wrote nothing."""
    log_dir = tmp_path / "results"
    done = subprocess.run(
        [
            str(TAU),
            "run",
            "--env",
            "airline",
            "--agent-strategy",
            "oracle",
            "--user-strategy",
            "scripted",
            "--task-ids",
            "0",
            *flags,
            "--data-dir",
            str(DATA_DIR),
            "--log-dir",
            str(log_dir),
        ],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
        env=env,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert not log_dir.exists()
    return errors[0]
