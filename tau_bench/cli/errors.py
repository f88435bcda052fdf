"""The CLI's one error path: expected failures become one clear line and an exit code.

Two kinds of expected failure reach the user:

- usage errors (unknown flag, missing value, a value of the wrong type): one `error: ...`
  line naming the command's `--help`, exit 2 (not click's usage block around its own
  `Error:` line). typer 0.29 raises its own vendored copy of click's exceptions, so both
  class families are recognised here; a group run with no arguments prints its help;
- user errors raised by commands (`fail`, `UserError`, a bad data directory, an unknown
  domain...): one `error: ...` line, exit 2 unless the command says otherwise; so is a
  path longer than the file system takes (ENAMETOOLONG), wherever a command meets it.

Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, NoReturn

import typer

from tau_adapters.jsonsafe import printable
from tau_adapters.redaction import environment_secrets, mask_values, truncate


def shown(message: str) -> str:
    """`message` as an error or note may show it: the values of secret-named environment
    variables masked (a key typed in the wrong place is echoed by the check that refuses
    it), a bot's control characters escaped."""
    return printable(str(mask_values(message, environment_secrets())))


class UserError(Exception):
    """An error caused by the user's input or environment; shown without a traceback."""


def note(message: str) -> None:
    """A status line on stderr, never wrapped (scripts grep these); a bot's words in it
    are shown, never obeyed by the terminal."""
    print(shown(message), file=sys.stderr, flush=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print `error: message` on stderr and exit with `code` (the one helper for commands).

    SystemExit, not typer.Exit: with standalone_mode=False click turns Exit into a return
    value, and CliRunner, `run_cli` and plain Python all keep SystemExit's code.
    """
    print(f"error: {shown(message)}", file=sys.stderr, flush=True)
    raise SystemExit(code)


def _user_error_types() -> tuple[type[BaseException], ...]:
    from tau_adapters.extras import MissingExtraError
    from tau_adapters.protocol import AdapterConfigError
    from tau_bench.data.paths import DataDirError
    from tau_bench.suites import UnknownDomainError, UnknownSplitError
    from tau_bench.tasks import TaskFileError

    return (
        UserError,
        MissingExtraError,
        AdapterConfigError,
        DataDirError,
        UnknownDomainError,
        UnknownSplitError,
        TaskFileError,
    )


def _click_families() -> tuple[
    tuple[type[BaseException], ...],
    tuple[type[BaseException], ...],
    tuple[type[BaseException], ...],
]:
    """(exit, abort, shown) exception classes of typer's vendored click and of click itself."""
    from typer._click import exceptions as vendored

    exits: list[type[BaseException]] = [typer.Exit]
    aborts: list[type[BaseException]] = [typer.Abort]
    shown: list[type[BaseException]] = [vendored.ClickException]
    try:
        import click
    except ImportError:  # typer 0.29 no longer needs click itself
        pass
    else:
        exits.append(click.exceptions.Exit)
        aborts.append(click.exceptions.Abort)
        shown.append(click.ClickException)
    return tuple(exits), tuple(aborts), tuple(shown)


def _click_message(exc: BaseException) -> str:
    """click's message on one line, and for a usage error where the command's help is:
    `Invalid value for '--port': ... (see 'tau serve --help')`, in place of click's usage
    block around an `Error:` line. Masked: a rejected value may be a key."""
    from tau_adapters.registry import one_line

    message = exc.format_message()  # type: ignore[attr-defined]
    ctx = getattr(exc, "ctx", None)
    helps = getattr(ctx, "help_option_names", None) if ctx is not None else None
    if helps:
        message = f"{message.rstrip('.')} (see '{ctx.command_path} {helps[0]}')"  # type: ignore[union-attr]
    return one_line(message)


def handle_error(exc: BaseException) -> int | None:
    """The exit code for an expected failure, after printing it; None for a bug."""
    exits, aborts, clicks = _click_families()
    if isinstance(exc, exits):
        return int(getattr(exc, "exit_code", 0) or 0)
    if isinstance(exc, clicks):
        if type(exc).__name__ == "NoArgsIsHelpError":
            exc.show()  # type: ignore[attr-defined]  # the command's help, as asked
        else:
            print(f"error: {_click_message(exc)}", file=sys.stderr)
        return int(getattr(exc, "exit_code", 1))
    if isinstance(exc, aborts):
        print("aborted", file=sys.stderr)
        return 1
    if isinstance(exc, _user_error_types()):
        print(f"error: {shown(str(exc))}", file=sys.stderr)
        return 2
    if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:
        # Only a path the user gave is ever that long; pathlib's probes (`is_dir`,
        # `exists`) raise this where a missing path is merely False.
        where = truncate(os.fsdecode(exc.filename), 200) if exc.filename else "a path"
        print(f"error: {shown(where)}: {exc.strerror}", file=sys.stderr)
        return 2
    return None


def run_cli(app: Any, args: list[str] | None = None) -> int:
    """Run a typer app (or click command) and return its exit code; never a traceback
    for usage or user errors."""
    try:
        outcome = app(args=args, standalone_mode=False)
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        code = handle_error(exc)
        if code is None:
            raise
        return code
    # Without standalone mode click returns typer.Exit's code instead of raising it.
    return outcome if isinstance(outcome, int) else 0
