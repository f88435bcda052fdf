"""`tau tasks list/show` as users read them (the installed console script): every expected
action counted and shown, a τ³ user's own marked; a table readable at 80 columns."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA_DIR, TAU3_DATA_DIR

TAU = Path(sys.executable).parent / "tau"
HEADERS = ("id", "actions", "instruction")


def _tau(*args: str, columns: int = 80) -> str:
    env = {
        **os.environ,
        "TAU_BENCH_DATA": str(DATA_DIR),
        "TAU3_BENCH_DATA": str(TAU3_DATA_DIR),
        "COLUMNS": str(columns),
    }
    done = subprocess.run(
        [str(TAU), *args], capture_output=True, text=True, check=False, timeout=120, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_show_lists_the_users_own_expected_actions() -> None:
    out = _tau("tasks", "show", "tau3/telecom/0")
    assert "Ground-truth actions (2)" in out, out
    assert "1. toggle_airplane_mode({}) (user)" in out
    assert "2. toggle_roaming({}) (user)" in out


def test_show_marks_no_assistant_action_as_the_users() -> None:
    out = _tau("tasks", "show", "2", "--env", "airline")
    listed = [line for line in out.splitlines() if re.match(r"\s+\d+\. \w+\(", line)]
    assert listed and not any(line.endswith("(user)") for line in listed), out


def _row(out: str, task_id: int) -> list[str]:
    """The cells of the table's row for `task_id` (its first line)."""
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip("│").split("│")]
        if line.startswith("│") and cells[0] == str(task_id):
            return cells
    raise AssertionError(f"no row {task_id}:\n{out}")


def test_list_counts_the_users_expected_actions() -> None:
    out = _tau("tasks", "list", "--env", "tau3/telecom", columns=200)
    header = [c.strip() for c in out.splitlines()[2].strip("┃").split("┃")]
    assert _row(out, 0)[header.index("actions")] == "2", out


@pytest.mark.parametrize("columns", [80, 200])
@pytest.mark.parametrize("env", ["tau3/mock", "tau3/telecom", "retail", "airline"])
def test_list_is_readable_in_the_console_width(env: str, columns: int) -> None:
    out = _tau("tasks", "list", "--env", env, columns=columns)
    lines = out.splitlines()
    header = [c.strip() for c in lines[2].strip("┃").split("┃")]
    for name in HEADERS:  # every column named whole, none shrunk to nothing
        assert name in header, lines[:4]
    assert all(header), lines[:4]
    if not env.startswith("tau3/"):
        assert "user" in header
    assert all(len(line) <= columns for line in lines), out
    body = [line for line in lines if line.startswith("│")]
    assert len(body) == len(
        [line for line in body if re.match(r"│\s*\d+ │", line)]
    )  # one line each
    first = _row(out, 0)
    instruction = first[header.index("instruction")]
    assert len(instruction) >= 15 and first[header.index("actions")].isdigit(), out
    if "user" in header:
        assert first[header.index("user")].startswith("yusuf_rossi" if env == "retail" else "mia_")
