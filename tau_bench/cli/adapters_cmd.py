"""`tau adapters [NAME]`: the installed agents and adapters, and an adapter's own flags."""

from __future__ import annotations

from typing import Annotated

import typer

from tau_bench.cli.errors import fail


def adapters(
    name: Annotated[str | None, typer.Argument(help="An adapter: show its options.")] = None,
) -> None:
    """List agent strategies (entry-point group tau_adapters), or one adapter's flags."""
    from rich.table import Table

    from tau_adapters.options import option_flags, options_model
    from tau_adapters.registry import UnknownAdapterError, available, load_builder
    from tau_bench import terminal

    console = terminal.console()
    if name is None:
        for strategy in available():
            console.print(strategy)
        return
    try:
        model = options_model(load_builder(name))
    except UnknownAdapterError as exc:
        fail(str(exc))
    except ImportError as exc:
        fail(f"agent strategy {name!r} is not available: {exc}")
    if model is None:
        console.print(f"{name}: no options of its own (the run's flags configure it)")
        return
    table = Table(title=f"{name}: tau run --agent-strategy {name} ...")
    for column in ("flags", "option", "meaning"):
        table.add_column(column)
    for flag in option_flags(model):
        kind = " (repeatable)" if flag.multiple else " (switch)" if flag.is_switch else ""
        secret = " [secret]" if flag.secret else ""
        table.add_row(", ".join(flag.flags), flag.field, flag.help + kind + secret)
    console.print(table)
