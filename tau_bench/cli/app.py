"""The `tau` command line. Thin: parse, call the library, print; no logic of its own.

Sub-commands live in one module each (`tau_bench/cli/<group>_cmd.py`) and are imported
lazily so that `tau tasks verify` does not pay for importing litellm or gRPC.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from tau_bench.cli.plugin_metadata import check_plugin_metadata

app = typer.Typer(
    name="tau",
    help="Evaluate conversational agents (Dialogflow CX, HTTP bots, LLMs) on τ-bench.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# (module, attribute, name, help): an attribute `app` is a command group, any other
# attribute a single command function. Modules must import heavy libraries lazily.
_COMMANDS = [
    (
        "tau_bench.cli.run_cmd",
        "run",
        "run",
        "Run agents on τ-bench tasks (the τ-bench run.py flags).",
    ),
    (
        "tau_bench.cli.eval_cmd",
        "eval",
        "eval",
        "Several user models x tasks x k samples: pass@k and pass^k.",
    ),
    ("tau_bench.cli.adapters_cmd", "adapters", "adapters", "Installed agents and their flags."),
    ("tau_bench.cli.data_cmd", "app", "data", "Benchmark data: where it is, pull it."),
    ("tau_bench.cli.env_cmd", "app", "env", "Run domain tools by hand (debugging)."),
    ("tau_bench.cli.tasks_cmd", "app", "tasks", "Browse and verify benchmark tasks."),
    ("tau_bench.cli.bench_cmd", "app", "bench", "Performance benchmarks (print a table)."),
    ("tau_bench.cli.sdg_cmd", "app", "sdg", "Synthetic task generation."),
    (
        "tau_bench.cli.compare_cmd",
        "compare",
        "compare",
        "Compare runs: metrics, paired CI, per task.",
    ),
    ("tau_bench.cli.compare_cmd", "report", "report", "Self-contained HTML report of runs."),
    ("tau_bench.cli.results_cmd", "rescore", "rescore", "Replay trajectories, recompute rewards."),
    ("tau_bench.cli.results_cmd", "analyze", "analyze", "LLM error analysis of failed episodes."),
    ("tau_bench.cli.results_cmd", "export", "export", "Export results (mt-bench, tau2)."),
    ("tau_bench.cli.view_cmd", "view", "view", "Browse a run's episodes and why they failed."),
    ("tau_bench.cli.serve_cmd", "serve", "serve", "Serve the evaluation HTTP API."),
    ("tau_bench.cli.tools_cmd", "app", "tools", "Serve domain tools to agents that call them."),
]
BUILTIN_COMMANDS = frozenset(entry[2] for entry in _COMMANDS)
"""Names no plug-in may take: `tau run` is always this package's."""


def _first_word(argv: list[str]) -> str | None:
    """The word after `tau` ("" for none) when this process is the `tau` program; None when
    something else imported this module (tests), which then registers everything."""
    program = Path(argv[0]).name if argv else ""
    if program not in ("tau", "tau.exe", "app.py"):
        return None
    return argv[1] if len(argv) > 1 else ""


def _only_group(argv: list[str]) -> str | None:
    """The built-in command group this invocation runs (`tau tasks ...` -> "tasks"), if any.

    Then only that group's module is imported: `tau tasks verify` need not import the
    run/eval flag machinery (config, adapters, asyncio: ~0.15 s). A group stays a group
    when it is the only one registered, so its sub-commands parse as usual; single
    commands (`tau run`) would not, so they, `tau --help` and plug-ins register everything,
    as does any process that imports this module without being the `tau` program.
    """
    name = _first_word(argv)
    entries = [c for c in _COMMANDS if c[2] == name]
    if len(entries) == 1 and entries[0][1] == "app":
        return name
    return None


def _plugin_scope(argv: list[str]) -> tuple[bool, str | None]:
    """(register plug-ins at all, only the one of this name).

    A built-in command (`tau run`) imports no plug-in, so a broken one cannot break it;
    `tau NAME` imports only plug-in NAME; listing (`tau`, `tau --help`) imports them all.
    """
    word = _first_word(argv)
    if word is None or word == "" or word.startswith("-"):
        return True, None
    if word in BUILTIN_COMMANDS:
        return False, None
    return True, word


def _register(only: str | None = None) -> None:
    import importlib

    for module_name, attr, name, help_text in _COMMANDS:
        if only is not None and name != only:
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        target = getattr(module, attr)
        if isinstance(target, typer.Typer):
            app.add_typer(target, name=name, help=help_text)
        else:
            settings = getattr(module, "CONTEXT_SETTINGS", {"allow_interspersed_args": True})
            app.command(name=name, help=help_text, context_settings=settings)(target)


# Adapters' harness commands (`tau dialogflow ...`, `tau http ...`) are plug-ins: each
# registers a typer app under this entry-point group, as adapters register themselves.
COMMANDS_GROUP = "tau_adapters.commands"


def _warn(message: str) -> None:
    """One warning line on stderr, from untrusted plug-in metadata made safe to print."""
    from tau_adapters.registry import one_line

    print(f"warning: {one_line(message)}", file=sys.stderr, flush=True)


def _register_broken(name: str, message: str) -> None:
    """A hidden stand-in for a plug-in that failed to load: `tau NAME ...` prints `message`
    as one error line (exit 2) instead of "No such command" or a traceback."""

    def broken() -> None:
        from tau_bench.cli.errors import fail

        fail(message)

    settings = {"allow_extra_args": True, "ignore_unknown_options": True}
    app.command(name=name, hidden=True, add_help_option=False, context_settings=settings)(broken)


def _register_plugins(only: str | None = None) -> None:
    """Register the `tau_adapters.commands` plug-ins (only `only`, when given).

    Third-party code cannot break `tau`: a plug-in named like a built-in command, or like
    one of this package's own plug-ins, is not registered; one that fails to load costs
    its own command only (a warning when listing, one error line when invoked). A missing
    optional dependency is quiet when listing: `tau --help` omits the command.
    """
    from tau_adapters.extras import MissingExtraError
    from tau_adapters.registry import (
        AdapterLoadError,
        distribution_name,
        load_entry_point,
        one_line,
        resolve,
    )

    chosen, shadowed = resolve(COMMANDS_GROUP)
    for ep, winner in shadowed:
        if only in (None, ep.name):
            _warn(
                f"command {ep.name!r} of {distribution_name(ep)} ({ep.value}) is not "
                f"registered: {distribution_name(winner)} provides it"
            )
    for name, ep in sorted(chosen.items()):
        if only is not None and name != only:
            continue
        label = f"command {name!r} of {distribution_name(ep)}"
        if name in BUILTIN_COMMANDS:
            _warn(f"{label} ({ep.value}) is not registered: {name} is built in")
            continue
        try:
            target = load_entry_point(ep, label)
        except MissingExtraError as exc:
            _register_broken(name, f"tau {name}: {exc}")
            continue
        except AdapterLoadError as exc:
            if only is None:
                _warn(str(exc))
            _register_broken(name, str(exc))
            continue
        if not isinstance(target, typer.Typer):
            message = one_line(f"{label} ({ep.value}) is not a typer app")
            if only is None:
                _warn(message)
            _register_broken(name, message)
            continue
        doc = (target.info.help or "").strip().splitlines()
        app.add_typer(target, name=name, help=doc[0] if doc else None)


check_plugin_metadata()
_ONLY = _only_group(sys.argv)
_register(_ONLY)
_PLUGINS, _ONLY_PLUGIN = _plugin_scope(sys.argv)
if _ONLY is None and _PLUGINS:
    _register_plugins(_ONLY_PLUGIN)


def main() -> None:
    """Console entry point: user errors print a message and exit non-zero, no traceback."""
    from tau_bench.cli.errors import run_cli
    from tau_bench.llm.runtime import configure_litellm

    configure_litellm()  # the one place a `tau` process sets litellm's options

    sys.exit(run_cli(app))


if __name__ == "__main__":
    main()
