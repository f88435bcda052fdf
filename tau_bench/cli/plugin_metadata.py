"""The installed distributions' broken plug-in metadata, named before anything else runs
(`tau` and `python run.py` both call `check_plugin_metadata` first)."""

from __future__ import annotations

import os
import sys


def check_plugin_metadata() -> None:
    """One warning line per installed distribution with broken plug-in metadata (which
    `tau_adapters.registry` then skips). Runs before any pydantic model class exists:
    pydantic looks up its own plug-ins (`pydantic.plugin._loader.get_plugins`) when the
    first model class is created, through `importlib.metadata.entry_points`, which raises
    on any unparsable entry_points.txt - a traceback out of whichever import came first.
    That lookup cannot get past the file, so it is switched off by pydantic's documented
    `PYDANTIC_DISABLE_PLUGINS`, as the warning says (unless the user set it)."""
    from tau_adapters.registry import metadata_problems

    problems = metadata_problems(("tau_adapters", "tau_bench"))
    disable = any(p.unparsable for p in problems) and "PYDANTIC_DISABLE_PLUGINS" not in os.environ
    for problem in problems:
        off = "; pydantic plug-ins are off" if disable and problem.unparsable else ""
        print(f"warning: {problem.message}{off}", file=sys.stderr, flush=True)
    if disable:
        os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
