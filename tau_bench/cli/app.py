"""The `tau` command line. Thin: parse, call the library, print; no logic of its own.

Sub-commands live in one module each (`tau_bench/cli/<group>_cmd.py`) and are imported
lazily so that `tau tasks verify` does not pay for importing litellm or gRPC.
"""

from __future__ import annotations

import os
import sys

import typer

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

app = typer.Typer(
    name="tau",
    help="Evaluate conversational agents (Dialogflow CX, HTTP bots, LLMs) on τ-bench.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# (module, attribute, command group name, help)
_GROUPS = [
    ("tau_bench.cli.data_cmd", "app", "data", "Benchmark data: where it is, pull it."),
    ("tau_bench.cli.env_cmd", "app", "env", "Run domain tools by hand (debugging)."),
    ("tau_bench.cli.tasks_cmd", "app", "tasks", "Browse and verify benchmark tasks."),
    ("tau_bench.cli.bench_cmd", "app", "bench", "Performance benchmarks (print a table)."),
]


def _register() -> None:
    import importlib

    for module_name, attr, name, help_text in _GROUPS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        app.add_typer(getattr(module, attr), name=name, help=help_text)


_register()


def main() -> None:
    """Console entry point: user errors print a message and exit non-zero, no traceback."""
    from tau_bench.cli.errors import run_cli

    sys.exit(run_cli(app))


if __name__ == "__main__":
    main()
