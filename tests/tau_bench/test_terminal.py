"""`tau_bench.terminal`: data reaches the terminal as it is, never as rich markup."""

from __future__ import annotations

import ast
import io
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from rich.markup import render
from rich.table import Table
from rich.text import Text

from tau_bench import terminal
from tau_bench.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
TAU = Path(sys.executable).with_name("tau")


def _commands(command: Any, path: str) -> Iterator[tuple[str, Any]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, f"{path} {name}")


def test_help_texts_are_plain_text_under_rich_markup() -> None:
    """typer renders help as rich markup: "[ray]" in a help text must be escaped ("\\[ray]")
    or `--help` drops it (it did: "pip install 'tau-adapters'")."""
    lost = []
    for path, command in _commands(typer.main.get_command(app), "tau"):
        texts = [command.help or "", command.short_help or "", command.epilog or ""]
        texts += [getattr(p, "help", None) or "" for p in command.params]
        for text in texts:
            if render(text).plain != text.replace("\\[", "["):
                lost.append(f"{path}: {text!r}")
    assert not lost, "\n".join(lost)


def test_every_command_says_what_it_is_for() -> None:
    """`tau --help` lists each command with its help; one without (`ces` had none) is a
    blank line in the list a new user reads first."""
    silent = [
        path
        for path, command in _commands(typer.main.get_command(app), "tau")
        if path != "tau" and not (command.help or command.short_help)
    ]
    assert not silent, silent


def test_the_ray_extra_is_named_in_run_help() -> None:
    done = subprocess.run(
        [str(TAU), "run", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "250"},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'tau-adapters[ray]'" in done.stdout


def test_a_console_prints_markup_and_emoji_like_text_as_it_is() -> None:
    console = terminal.console(width=200, record=True, file=io.StringIO())
    table = Table(title="[/red]run")
    table.add_column("task")
    table.add_row("[mobile_data_issue]roaming_off[PERSONA:None]")
    console.print(table)
    console.print("[/bold] [type=missing, input_value={}, input_type=dict]")
    console.print(terminal.styled("[red]", "green"))
    console.print("direct ray x2 at 20:100: 0.95x; the bot said :smile:")
    out = console.export_text()
    for text in (
        "direct ray x2 at 20:100: 0.95x; the bot said :smile:",
        "[/red]run",
        "[mobile_data_issue]roaming_off[PERSONA:None]",
        "[/bold] [type=missing, input_value={}, input_type=dict]",
        "[red]",
    ):
        assert text in out


def _product_modules() -> Iterator[Path]:
    for package in ("tau_adapters", "tau_bench", "adapters"):
        yield from (ROOT / package).rglob("*.py")


def test_consoles_are_made_only_by_terminal() -> None:
    """One way to print: a `Console(...)` made elsewhere would have markup on again, and
    `rich.markup.escape` is then not needed anywhere (with markup off it shows its
    backslashes)."""
    offenders = []
    for module in _product_modules():
        if module == ROOT / "tau_bench" / "terminal.py":
            continue
        tree = ast.parse(module.read_text(), str(module))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "Console"
            ) or (isinstance(node, ast.ImportFrom) and node.module == "rich.markup"):
                offenders.append(f"{module.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, offenders


def test_a_console_shows_control_characters_instead_of_obeying_them() -> None:
    """On a real terminal too: the only escape sequences written are the styles' own."""
    screen = io.StringIO()
    console = terminal.console(file=screen, force_terminal=True, width=80)
    table = Table()
    table.add_column("said")
    table.add_row("a\x1b[2Jb")
    table.add_row(terminal.styled("c\x9b31md\u202ee", "red"))
    console.print(table)
    console.print(Text.assemble(("agent: ", "bold"), "\x1b]52;c;aGk=\x07x\x00y"))
    console.print("plain\x1b[H\x7f")
    out = screen.getvalue()
    assert re.sub(r"\x1b\[[0-9;]*m", "", out).count("\x1b") == 0
    for shown in ("a␛[2Jb", "c�31md�e", "agent: ␛]52;c;aGk=x␀y", "plain␛[H␡"):
        assert shown in re.sub(r"\x1b\[[0-9;]*m", "", out)


def test_displayable_keeps_the_length_newlines_and_tabs() -> None:
    text = "a\tb\nc\x1b\x00\x7f\x85\u2028\u202e\u2066"
    shown = terminal.displayable(text)
    assert len(shown) == len(text) and shown.startswith("a\tb\nc")
    assert shown[5:] == "␛␀␡" + "\ufffd" * 4
