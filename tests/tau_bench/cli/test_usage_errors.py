"""Usage and user errors through the INSTALLED console scripts: one line, never a traceback.

These run `.venv/bin/tau` and `python run.py` in a subprocess because the bug they guard
against (typer raising its vendored click exceptions past our handler) only shows in the
real entry point, not under CliRunner.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau_bench.cli.errors import fail, handle_error, run_cli

from ...conftest import DATA_DIR

ROOT = Path(__file__).resolve().parents[3]
TAU = Path(sys.executable).parent / "tau"
TIMEOUT = 120  # seconds; a usage error answers in about one


def _run(argv: list[str], **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.update(extra_env)
    env.pop("TAU_SERVE_TOKEN", None)
    return subprocess.run(
        argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=TIMEOUT
    )


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.lower().startswith("error:")]


USAGE_ERRORS = [
    (["run", "--bogus-flag"], "--bogus-flag"),
    (["run", "--env"], "--env"),
    (["run", "--max-concurrency", "abc"], "--max-concurrency"),
    (["export", str(ROOT), "--format"], "--format"),
    (["tasks", "show", "--env", "retail", "abc"], "task id"),
    (["serve", "--port", "99999"], "--port"),
    (["serve", "--max-runs", "1000"], "--max-runs"),
    (["nosuch"], "nosuch"),
    (["compare", "--bootstrap"], "--bootstrap"),
    (["bench", "runner", "--workers", "1,2"], "--backend ray"),
    (["bench", "runner", "--stack", "raw", "--backend", "ray"], "raw stack"),
]


@pytest.mark.parametrize(
    ("args", "names"), USAGE_ERRORS, ids=[" ".join(a) for a, _ in USAGE_ERRORS]
)
def test_usage_errors_print_one_line_and_exit_2(args: list[str], names: str) -> None:
    assert TAU.exists(), f"the console script is not installed at {TAU}"
    done = _run([str(TAU), *args])
    assert "Traceback" not in done.stderr
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr  # no usage block around it
    assert done.stderr.startswith("error: ") and names in done.stderr


def test_a_usage_error_names_the_commands_help() -> None:
    done = _run([str(TAU), "serve", "--max-runs", "1000"])
    assert done.returncode == 2
    assert done.stderr == (
        "error: Invalid value for '--max-runs': Input should be less than or equal to 64 "
        "(see 'tau serve --help')\n"
    )


def test_a_group_without_arguments_still_prints_its_help() -> None:
    done = _run([str(TAU), "tasks"])
    assert done.returncode == 2
    assert "Usage: tau tasks" in done.stdout and not done.stderr.strip()


def test_run_py_usage_error_is_the_same_as_tau_run() -> None:
    done = _run([sys.executable, "run.py", "--bogus"])
    assert "Traceback" not in done.stderr
    assert done.returncode == 2
    assert done.stderr == "error: No such option: --bogus (see 'run.py --help')\n"


USER_ERRORS = [
    (["tasks", "show", "--env", "retail", "99999"], "out of range"),
    (["compare", "/nonexistent/results-dir"], "/nonexistent/results-dir"),
    (["export", "/nonexistent/results-dir", "-o", "/tmp/never-written"], "/nonexistent"),
    (["tasks", "list", "--env", "no-such-domain"], "no-such-domain"),
    # a path over the file system's 255 bytes a name: pathlib's probes raise for it
    (["compare", "r" * 400], "File name too long"),
    (["rescore", "r" * 400], "File name too long"),
    (["export", "r" * 400], "File name too long"),
    (["view", "r" * 400], "File name too long"),
]


@pytest.mark.parametrize(
    ("args", "needle"), USER_ERRORS, ids=[" ".join(a)[:60] for a, _ in USER_ERRORS]
)
def test_user_errors_print_one_line(args: list[str], needle: str) -> None:
    done = _run([str(TAU), *args])
    assert "Traceback" not in done.stderr
    assert done.returncode != 0
    lines = _error_lines(done.stderr)
    assert len(lines) == 1, done.stderr
    assert needle in lines[0]


KEY = "sk-typed-in-the-wrong-place-0123456789"


@pytest.mark.parametrize(
    "args",
    [["export", str(ROOT), "--format", KEY], ["run", "--env", KEY], ["run", "--num-trials", KEY]],
    ids=["a user error", "a run setting", "a usage error"],
)
def test_an_error_never_echoes_a_key_from_the_environment(args: list[str]) -> None:
    done = _run([str(TAU), *args], OPENAI_API_KEY=KEY)
    assert done.returncode == 2 and done.stderr.startswith("error: "), done.stderr
    assert KEY not in done.stderr + done.stdout


def test_fail_exits_with_its_code_and_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        fail("bad thing", 3)
    assert raised.value.code == 3
    assert capsys.readouterr().err == "error: bad thing\n"


def test_both_click_families_are_handled(capsys: pytest.CaptureFixture[str]) -> None:
    import click
    from typer._click import exceptions as vendored

    assert handle_error(vendored.UsageError("typer's own")) == 2
    assert handle_error(click.UsageError("click's")) == 2
    err = capsys.readouterr().err
    assert "typer's own" in err and "click's" in err
    assert handle_error(RuntimeError("a bug")) is None


def test_a_path_too_long_is_one_line_wherever_it_is_met(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import errno

    too_long = OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), "p" * 5000)
    assert handle_error(too_long) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ppp") and err.endswith(": File name too long\n")
    assert len(err) < 300  # the path cut short
    assert handle_error(OSError(errno.EIO, "I/O error", "x")) is None  # other OSErrors: bugs


def test_run_cli_lets_bugs_keep_their_traceback() -> None:
    import typer

    app = typer.Typer()

    @app.command()
    def boom() -> None:
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError):
        run_cli(app, [])
