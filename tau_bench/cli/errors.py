"""Turn expected failures into one clear line on stderr and a non-zero exit code."""

from __future__ import annotations

import sys
from typing import Any

import typer


class UserError(Exception):
    """An error caused by the user's input or environment; shown without a traceback."""


def _user_error_types() -> tuple[type[BaseException], ...]:
    from tau_bench.data.paths import DataDirError
    from tau_bench.domains import UnknownDomainError, UnknownSplitError
    from tau_bench.tasks import TaskFileError

    return (UserError, DataDirError, UnknownDomainError, UnknownSplitError, TaskFileError)


def run_cli(app: typer.Typer) -> int:
    try:
        outcome = app(standalone_mode=False)
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        import click

        if isinstance(exc, click.exceptions.Exit):
            return exc.exit_code
        if isinstance(exc, click.ClickException):
            exc.show()
            return exc.exit_code
        if isinstance(exc, click.exceptions.Abort):
            print("aborted", file=sys.stderr)
            return 1
        if isinstance(exc, _user_error_types()):
            print(f"error: {exc}", file=sys.stderr)
            return 2
        raise
    # Without standalone mode click returns typer.Exit's code instead of raising it.
    return outcome if isinstance(outcome, int) else 0


def fail(message: str, code: int = 2) -> Any:
    """Print `message` and exit with `code` (for use inside commands)."""
    print(f"error: {message}", file=sys.stderr)
    raise typer.Exit(code)
