"""A model or provider name given empty (`--model "$MODEL"` with MODEL unset) is one
line, not the default model: each was taken as if left out, so a run meant for one model
silently ran (and paid for) another."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ...conftest import DATA_DIR

TAU = Path(sys.executable).parent / "tau"


@pytest.mark.parametrize(
    ("flag", "field"),
    [
        ("--model", "model"),
        ("--model-provider", "model_provider"),
        ("--user-model", "user_model"),
        ("--user-model-provider", "user_model_provider"),
        ("--judge-model", "judge_model"),
    ],
)
def test_an_empty_name_is_refused_before_the_run(tmp_path: Path, flag: str, field: str) -> None:
    done = subprocess.run(
        [
            str(TAU), "run", "--env", "retail", "--agent-strategy", "oracle",
            "--user-strategy", "scripted", "--task-ids", "0", "--log-dir", str(tmp_path),
            flag, " ",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "TAU_BENCH_DATA": str(DATA_DIR)},
        timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"error: {field}: the name is empty (an unset variable?): leave it out for the default\n"
    )
    assert not any(tmp_path.iterdir())
