"""docs/a2a.md cannot drift from the CLI: every flag its commands and tables name exists
in the installed `tau` (the help of the command, or `tau adapters a2a` for `tau run`)."""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "a2a.md"
TAU = str(ROOT / ".venv" / "bin" / "tau")
FLAG = re.compile(r"--[A-Za-z0-9][A-Za-z0-9_-]*")


@functools.cache
def flags_of(*command: str) -> frozenset[str]:
    """The flags the installed console script prints for `tau COMMAND` (wide, unwrapped)."""
    env = {**os.environ, "COLUMNS": "250", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [TAU, *command], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env
    )
    assert out.returncode == 0, out.stderr
    return frozenset(FLAG.findall(out.stdout))


def known_flags(subcommand: tuple[str, ...]) -> frozenset[str]:
    known = flags_of(*subcommand, "--help")
    if subcommand == ("run",):  # an adapter's flags are `tau run` flags too
        known |= flags_of("adapters", "a2a")
    return known


def doc_commands() -> list[tuple[tuple[str, ...], list[str]]]:
    """(subcommand, flags) of every `tau ...` line in the doc's code blocks."""
    commands = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", DOC.read_text(), re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line.strip(), comments=True)
            if not words or words[0] != "tau":
                continue
            subcommand = tuple(w for w in words[1:3] if not w.startswith("-"))
            if subcommand[:1] != ("a2a",):
                subcommand = subcommand[:1]
            commands.append((subcommand, [w.split("=")[0] for w in words if w.startswith("--")]))
    return commands


def table_flags(heading: str) -> list[str]:
    """Flags in the table right under `heading` (its rows' backquoted `--flag`s)."""
    section = DOC.read_text().split(heading, 1)[1]
    rows = re.search(r"\n(\|.*\|\n)+", section)
    assert rows is not None, heading
    return [f for cell in re.findall(r"`([^`]*)`", rows.group()) for f in FLAG.findall(cell)]


def test_the_doc_has_the_commands_it_shows() -> None:
    subcommands = {c for c, _ in doc_commands()}
    assert {("run",), ("a2a", "check"), ("a2a", "serve-agent")} <= subcommands


@pytest.mark.parametrize(("subcommand", "flags"), doc_commands(), ids=lambda v: " ".join(v))
def test_every_flag_of_a_doc_command_exists(subcommand: tuple[str, ...], flags: list[str]) -> None:
    missing = [f for f in flags if f not in known_flags(subcommand)]
    assert missing == [], f"docs/a2a.md: `tau {' '.join(subcommand)}` has no {missing}"


def test_every_flag_of_the_options_table_is_a_tau_run_flag() -> None:
    flags = table_flags("## Options")
    assert "--a2a-url" in flags and "--max-response-bytes" in flags
    assert [f for f in flags if f not in flags_of("adapters", "a2a")] == []


def test_every_flag_of_the_reference_agent_table_exists() -> None:
    flags = table_flags("## The reference agent and `tau a2a`")
    assert "--public-url" in flags
    known = known_flags(("a2a", "serve-agent"))
    assert [f for f in flags if f not in known] == []


def test_every_option_is_in_the_options_table() -> None:
    from adapters.a2a.options import Options

    section = DOC.read_text().split("## Options", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"^\| `(\w+)`(?:, `(\w+)`)?", section, re.MULTILINE))
    documented = {n for pair in named for n in pair if n}
    assert set(Options.model_fields) - documented == set()
