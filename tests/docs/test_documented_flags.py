"""Every flag a documented `tau run` / `python run.py` command uses exists: users copy
these commands, and a doc that drifted from the CLI is a broken first run."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TAU = Path(sys.executable).parent / "tau"
FLAG = re.compile(r"--[a-z0-9][a-z0-9_-]*")
COMMAND = re.compile(r"^\s*(?:\$ )?(?:tau run|python run\.py)\b")


def _output(*args: str) -> str:
    env = {**os.environ, "COLUMNS": "300"}
    proc = subprocess.run(
        [str(TAU), *args], capture_output=True, text=True, timeout=120, env=env, check=True
    )
    return proc.stdout


def _accepted_flags() -> set[str]:
    """`tau run`'s own flags and every installed agent's (`tau adapters NAME`)."""
    flags = set(FLAG.findall(_output("run", "--help")))
    for name in _output("adapters").split():
        flags |= set(FLAG.findall(_output("adapters", name)))
    return flags


def _documented_commands() -> list[tuple[str, str]]:
    """(where, command) for every `tau run` / `python run.py` line in a code block of the
    README and docs/, continuation lines joined."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        in_code, pending, start = False, "", 0
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("```"):
                in_code, pending = not in_code, ""
                continue
            if not in_code:
                continue
            if pending:
                pending += " " + line.strip()
            elif COMMAND.match(line):
                pending, start = line.strip(), number
            if pending and not pending.endswith("\\"):
                found.append((f"{path.name}:{start}", pending.split("#")[0]))
                pending = ""
    return found


def test_documented_run_commands_use_only_flags_that_exist() -> None:
    commands = _documented_commands()
    assert len(commands) > 20  # the scan itself still finds the docs' commands
    accepted = _accepted_flags()
    unknown = [
        f"{where}: {flag}"
        for where, command in commands
        for token in shlex.split(command.replace("\\", " "), posix=True)
        for flag in FLAG.findall(token.split("=")[0])
        if token.startswith("--") and flag not in accepted
    ]
    assert not unknown, "documented flags that `tau run` refuses:\n" + "\n".join(unknown)
