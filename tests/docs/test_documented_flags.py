"""Every flag a documented `tau ...` or `python run.py` command uses exists on that very
command: users copy these commands, and a doc that drifted from the CLI is a broken
first run. Commands are read from fenced and indented code blocks (continuation lines
joined, `&&`/`|` chains split) and from inline code spans of the README and docs/."""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TAU = Path(sys.executable).parent / "tau"
FLAG = re.compile(r"--[a-z0-9][a-z0-9_-]*")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
SPAN = re.compile(r"`((?:tau|python run\.py) [^`]+)`")
CHAIN = re.compile(r"&&|\|\||;|\|")
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@functools.cache
def _help(command: tuple[str, ...]) -> str | None:
    """`tau COMMAND --help`, None when there is no such command."""
    env = {**os.environ, "COLUMNS": "300"}
    proc = subprocess.run(
        [str(TAU), *command, "--help"], capture_output=True, text=True, timeout=120, env=env
    )
    return proc.stdout if proc.returncode == 0 else None


def _subcommands(help_text: str) -> set[str]:
    """The names in a group's `Commands` box."""
    if "─ Commands ─" not in help_text:
        return set()
    return set(re.findall(r"^│ ([a-z0-9][a-z0-9-]*)\s", help_text.split("─ Commands ─")[1], re.M))


@functools.cache
def _run_flags() -> frozenset[str]:
    """`tau run`'s own flags and every installed agent's (`tau adapters NAME`)."""
    flags = set(FLAG.findall(_help(("run",)) or ""))
    env = {**os.environ, "COLUMNS": "300"}
    listed = subprocess.run(
        [str(TAU), "adapters"], capture_output=True, text=True, timeout=120, env=env, check=True
    )
    for name in listed.stdout.split():
        shown = subprocess.run(
            [str(TAU), "adapters", name], capture_output=True, text=True, timeout=120, env=env
        )
        flags |= set(FLAG.findall(shown.stdout))
    return frozenset(flags)


def _commands_in(text: str) -> Iterator[list[str]]:
    """The `tau`/`python run.py` commands of one shell line, as tokens."""
    for piece in CHAIN.split(text.split(" #")[0]):
        try:
            tokens = shlex.split(piece)
        except ValueError:  # an unbalanced quote: prose, not a command
            continue
        while tokens and (ASSIGNMENT.match(tokens[0]) or tokens[0] in ("$", "env")):
            tokens = tokens[1:]
        if tokens[:1] == ["tau"]:
            yield tokens
        elif tokens[:2] == ["python", "run.py"]:
            yield ["tau", "run", *tokens[2:]]


def _documented() -> list[tuple[str, list[str]]]:
    """(where, tokens) of every documented command."""
    found = []
    for path in DOCS:
        fenced, pending, start = False, "", 0
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("```"):
                fenced, pending = not fenced, ""
                continue
            stripped = line.strip()
            for span in SPAN.findall(line):
                found += [(f"{path.name}:{number}", t) for t in _commands_in(span)]
            indented = line.startswith("    ") and stripped.startswith(("tau ", "$ tau "))
            if not (fenced or indented or pending):
                continue
            if not pending:
                start = number
            pending = f"{pending} {stripped}" if pending else stripped
            if pending.endswith("\\"):
                pending = pending[:-1]
                continue
            found += [(f"{path.name}:{start}", t) for t in _commands_in(pending)]
            pending = ""
    return found


def _command_and_flags(tokens: list[str]) -> tuple[tuple[str, ...], list[str]]:
    """The (sub)command the tokens name, and the flags they give it."""
    command: tuple[str, ...] = ()
    rest = tokens[1:]
    while rest and rest[0] in _subcommands(_help(command) or ""):
        command, rest = (*command, rest[0]), rest[1:]
    flags = [FLAG.findall(t.split("=")[0])[0] for t in rest if FLAG.match(t)]
    return command, flags


def test_documented_commands_use_only_flags_that_exist() -> None:
    commands = _documented()
    named = {_command_and_flags(tokens)[0][:1] for _, tokens in commands}
    assert len(commands) > 200 and len(named) > 15  # the scan still finds the docs' commands
    problems = []
    for where, tokens in commands:
        command, flags = _command_and_flags(tokens)
        if not command:
            if len(tokens) > 1 and re.fullmatch(r"[a-z][a-z0-9-]*", tokens[1]):
                problems.append(f"{where}: `tau {tokens[1]}` is no command")
            continue
        accepted = _run_flags() if command == ("run",) else set(FLAG.findall(_help(command) or ""))
        problems += [
            f"{where}: tau {' '.join(command)} {flag}" for flag in flags if flag not in accepted
        ]
    assert not problems, "documented commands the CLI refuses:\n" + "\n".join(problems)
