"""`tau export` of a run with no episodes (a log that is its header alone) is refused
with one `error:` line before anything is written, as `compare` refuses it: an export of
empty files would read downstream as a run that scored nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TAU = Path(sys.executable).parent / "tau"


@pytest.mark.parametrize("fmt", ["mt-bench", "tau2"])
def test_export_of_a_header_only_log_is_refused(tmp_path: Path, fmt: str) -> None:
    log = tmp_path / "empty.jsonl"
    header = {"type": "header", "format": "tau-adapters-run/1", "run_name": "empty"}
    log.write_text(json.dumps({**header, "config": {"env": "retail", "num_trials": 1}}) + "\n")
    out = tmp_path / "out"
    proc = subprocess.run(
        [str(TAU), "export", str(log), "--format", fmt, "-o", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == ["error: empty: no episodes to export"]
    assert not out.exists()
