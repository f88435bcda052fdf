"""`tau_bench.terminal`: data reaches the terminal as it is, never as rich markup."""

from __future__ import annotations

import ast
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from rich.markup import render
from rich.table import Table

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


def test_a_console_prints_markup_like_text_as_it_is() -> None:
    console = terminal.console(width=200, record=True, file=io.StringIO())
    table = Table(title="[/red]run")
    table.add_column("task")
    table.add_row("[mobile_data_issue]roaming_off[PERSONA:None]")
    console.print(table)
    console.print("[/bold] [type=missing, input_value={}, input_type=dict]")
    console.print(terminal.styled("[red]", "green"))
    out = console.export_text()
    for text in (
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
