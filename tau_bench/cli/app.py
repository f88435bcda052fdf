"""The `tau` command line. Thin: parse, call the library, print; no logic of its own.

Sub-commands live in one module each (`tau_bench/cli/<group>_cmd.py`) and are imported
lazily so that `tau tasks verify` does not pay for importing litellm or gRPC.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

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
    ("tau_bench.cli.results_cmd", "export", "export", "Export results (mt-bench)."),
    ("tau_bench.cli.view_cmd", "view", "view", "Browse a run's episodes and why they failed."),
    ("tau_bench.cli.serve_cmd", "serve", "serve", "Serve the evaluation HTTP API."),
    ("tau_bench.cli.tools_cmd", "app", "tools", "Serve domain tools to agents that call them."),
]


def _only_group(argv: list[str]) -> str | None:
    """The built-in command group this invocation runs (`tau tasks ...` -> "tasks"), if any.

    Then only that group's module is imported: `tau tasks verify` need not import the
    run/eval flag machinery (config, adapters, asyncio: ~0.15 s). A group stays a group
    when it is the only one registered, so its sub-commands parse as usual; single
    commands (`tau run`) would not, so they, `tau --help` and plug-ins register everything,
    as does any process that imports this module without being the `tau` program.
    """
    program = Path(argv[0]).name if argv else ""
    if program not in ("tau", "tau.exe", "app.py"):  # imported by something else (tests)
        return None
    name = argv[1] if len(argv) > 1 else ""
    entries = [c for c in _COMMANDS if c[2] == name]
    if len(entries) == 1 and entries[0][1] == "app":
        return name
    return None


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


def _register_plugins() -> None:
    from importlib.metadata import entry_points

    for ep in sorted(entry_points(group=COMMANDS_GROUP), key=lambda e: e.name):
        try:
            target = ep.load()
        except ImportError:
            continue  # its optional dependencies are not installed: `tau --help` omits it
        if isinstance(target, typer.Typer):
            doc = (target.info.help or "").strip().splitlines()
            app.add_typer(target, name=ep.name, help=doc[0] if doc else None)


_ONLY = _only_group(sys.argv)
_register(_ONLY)
if _ONLY is None:
    _register_plugins()


def main() -> None:
    """Console entry point: user errors print a message and exit non-zero, no traceback."""
    from tau_bench.cli.errors import run_cli
    from tau_bench.llm.runtime import configure_litellm

    configure_litellm()  # the one place a `tau` process sets litellm's options

    sys.exit(run_cli(app))


if __name__ == "__main__":
    main()
