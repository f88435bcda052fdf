"""`tau adapters [NAME]`: the installed agents and adapters, and an adapter's own flags."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from tau_bench.cli.errors import fail


def adapters(
    name: Annotated[str | None, typer.Argument(help="An adapter: show its options.")] = None,
) -> None:
    """List agent strategies (entry-point group tau_adapters), or one adapter's flags."""
    from rich.table import Table

    from tau_adapters.options import option_flags, options_model
    from tau_adapters.registry import UnknownAdapterError, available, load_builder, one_line
    from tau_bench import terminal

    console = terminal.console()
    _note_shadowed(name)
    if name is None:
        for strategy in available():
            console.print(one_line(strategy), markup=False, highlight=False)
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
        kind = " (repeatable)" if flag.multiple else ""
        if flag.is_switch:
            kind = f" (switch; {flag.off_flags[0]} turns it off)"
        secret = " [secret]" if flag.secret else ""
        table.add_row(", ".join(flag.flags), flag.field, flag.help + kind + secret)
    console.print(table)


def _note_shadowed(name: str | None) -> None:
    """On stderr (stdout stays the list of names): the plug-ins not used because another
    entry point has their name - this package's own wins, so `oracle` stays the oracle."""
    from tau_adapters.registry import distribution_name, one_line, shadowed

    for ep, winner in shadowed():
        if name in (None, ep.name):
            note = (
                f"agent strategy {ep.name!r} of {distribution_name(ep)} ({ep.value}) is "
                f"shadowed by {winner.value} of {distribution_name(winner)}"
            )
            print(f"note: {one_line(note)}", file=sys.stderr)
