"""What a core-only install (no extras) can do: run the benchmark with local agents; and
what it cannot, with a one-line message naming the extra instead of a traceback."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import DATA_DIR
from tests.packaging.hiding import ALL_EXTRA_MODULES, run_hidden

CLI = "import sys; from tau_bench.cli.app import main; sys.argv = ['tau', *{args!r}]; main()"


def _tau(*args: str) -> tuple[int, str, str]:
    proc = run_hidden(CLI.format(args=list(args)), ALL_EXTRA_MODULES)
    return proc.returncode, proc.stdout, proc.stderr


def test_a_run_with_local_agents_needs_no_extra(tmp_path: Path) -> None:
    code, _, err = _tau(
        "run",
        "--env",
        "airline",
        "--agent-strategy",
        "oracle",
        "--user-strategy",
        "scripted",
        "--task-ids",
        "0",
        "1",
        "--data-dir",
        str(DATA_DIR),
        "--log-dir",
        str(tmp_path),
        "--quiet",
    )
    assert code == 0, err
    assert "Traceback" not in err
    assert list(tmp_path.glob("*.json"))


def test_commands_of_a_missing_extra_say_which_to_install(tmp_path: Path) -> None:
    code, _, err = _tau(
        "tools", "serve", "--env", "airline", "--token", "t", "--data-dir", str(DATA_DIR)
    )
    assert code == 2 and "Traceback" not in err
    assert "pip install 'tau-adapters[http]'" in err
    code, _, err = _tau("run", "--env", "airline", "--agent-strategy", "decibel", "--agent-id", "a")
    assert code != 0 and "Traceback" not in err
    assert "tau-adapters[dialogflow]" in err
