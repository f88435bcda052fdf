"""`tau dialogflow emulate` and `tau ces emulate` flags as users meet them (the installed
console script): `--env` names the τ³ domains they serve, and `--brain-option` goes
through the shared KEY=VALUE parser and the brain's own checks, one line before the
emulator listens."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA_DIR

TAU = str(Path(sys.executable).parent / "tau")
ENV = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "COLUMNS": "250"}
EMULATORS = ["dialogflow", "ces"]


def emulate(platform: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TAU, platform, "emulate", *args],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("platform", EMULATORS)
def test_help_says_env_takes_tau3_domains(platform: str) -> None:
    out = emulate(platform, "--help")
    assert out.returncode == 0, out.stderr
    assert (
        "airline, retail or a τ³ one (tau3/airline, tau3/retail, tau3/telecom, ...)" in out.stdout
    )


@pytest.mark.parametrize("platform", EMULATORS)
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--brain-option", "temperature"], "--brain-option expects KEY=VALUE, got 'temperature'"),
        (
            [
                "--brain",
                "tool-calling",
                "--brain-option",
                "model=openai/m",
                "--brain-option",
                "temperature=nan",
            ],
            "option 'temperature' must be a finite number at least 0, got nan",
        ),
    ],
)
def test_a_bad_brain_option_is_one_line_before_it_listens(
    platform: str, args: list[str], expected: str
) -> None:
    out = emulate(platform, "--port", "0", *args)
    assert (out.returncode, out.stdout, out.stderr) == (2, "", f"error: {expected}\n")
