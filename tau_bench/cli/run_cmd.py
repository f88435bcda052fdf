"""`tau run` (and `python run.py`): τ-bench's run.py flags, YAML configs, resume.

Thin: gather flags (both `--dash` and `--under_score` spellings), layer them as
defaults < the resumed run's config < `--config` YAML < command line, build a
RunConfig, and hand it to `tau_bench.runner`. `--task-ids 1 2 3` works as argparse's
nargs="+" did: the values after the flag land in a hidden positional list.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn, get_args

import typer
from typer.models import OptionInfo

from tau_bench.config import RunConfig

_D = RunConfig()
ADAPTER_PANEL = "Adapter options (passed to the adapter in agent_options)"
RUN_PANEL = "Run control"
# CLI parameter name -> agent_options key (the Dialogflow CX and HTTP adapters' flags).
_ADAPTER_FLAGS = {
    "agent_id": "agent_id",
    "project_id": "project_id",
    "location": "location",
    "environment": "environment",
    "language_code": "language_code",
    "credentials": "credentials",
    "gcp_sa_file": "gcp_sa_file",
    "api_endpoint": "api_endpoint",
    "session_param": "session_params",
    "session_ttl": "session_ttl",
    "emulator": "emulator",
    "http_config": "http_config",
}
_NOT_CONFIG = frozenset({"config", "extra_task_ids"})


def _flags(
    extra_task_ids: Annotated[
        list[str] | None, typer.Argument(hidden=True, show_default=False, metavar="TASK_IDS")
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="YAML file of flag values (CLI overrides it).")
    ] = None,
    env: Annotated[
        str,
        typer.Option(
            "--env",
            help="Domain: retail or airline; several: retail,airline (ids become retail/N).",
        ),
    ] = _D.env,
    agent_strategy: Annotated[
        str,
        typer.Option(
            "--agent-strategy",
            help="Agent: tool-calling, act, react, few-shot, oracle, or an adapter (decibel, http...).",
        ),
    ] = _D.agent_strategy,
    model: Annotated[
        str | None,
        typer.Option("--model", help="Agent model; a prefix (openai/gpt-4o) sets the provider."),
    ] = None,
    model_provider: Annotated[
        str | None, typer.Option("--model-provider", help="litellm provider of --model.")
    ] = None,
    api_base: Annotated[
        str | None,
        typer.Option("--api-base", help="Base URL of an OpenAI-compatible server for the agent."),
    ] = None,
    temperature: Annotated[
        float, typer.Option("--temperature", help="Agent sampling temperature.")
    ] = _D.temperature,
    top_p: Annotated[
        float | None, typer.Option("--top-p", help="Agent nucleus sampling (default: the model's).")
    ] = None,
    user_strategy: Annotated[
        str,
        typer.Option(
            "--user-strategy",
            help="User simulator: llm, react, verify, reflection, human, scripted.",
        ),
    ] = _D.user_strategy,
    user_model: Annotated[
        str, typer.Option("--user-model", help="User simulator model.")
    ] = _D.user_model,
    user_models: Annotated[
        str | None,
        typer.Option(
            "--user-models",
            help="m1,m2,...: user models assigned round-robin over samples (overrides --user-model).",
        ),
    ] = None,
    user_model_provider: Annotated[
        str | None, typer.Option("--user-model-provider", help="litellm provider of --user-model.")
    ] = None,
    user_api_base: Annotated[
        str | None,
        typer.Option(
            "--user-api-base", help="Base URL of an OpenAI-compatible server for the user."
        ),
    ] = None,
    user_temperature: Annotated[
        float | None,
        typer.Option(
            "--user-temperature", help="User model temperature (default: the simulator's)."
        ),
    ] = None,
    user_top_p: Annotated[
        float | None,
        typer.Option("--user-top-p", help="User model nucleus sampling (default: the model's)."),
    ] = None,
    user_affirmative: Annotated[
        str | None,
        typer.Option("--user-affirmative", help="What the scripted user answers to questions."),
    ] = None,
    task_split: Annotated[
        str, typer.Option("--task-split", help="Split: test (both), train/dev (retail).")
    ] = _D.task_split,
    start_index: Annotated[int, typer.Option("--start-index")] = _D.start_index,
    end_index: Annotated[
        int, typer.Option("--end-index", help="Exclusive end; -1 runs to the last task.")
    ] = _D.end_index,
    task_ids: Annotated[
        list[str] | None,
        typer.Option(
            "--task-ids",
            metavar="<ids>",
            help="Run only these task ids: --task-ids 1 2 3 (retail/3 across domains).",
        ),
    ] = None,
    tasks_file: Annotated[
        str | None,
        typer.Option("--tasks-file", help="Run tasks from this JSON file instead of a split."),
    ] = None,
    num_trials: Annotated[int, typer.Option("--num-trials")] = _D.num_trials,
    max_concurrency: Annotated[
        int, typer.Option("--max-concurrency", help="Episodes running at once.")
    ] = _D.max_concurrency,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            help="Processes running episodes (each gets max-concurrency / N); for CPU-bound runs.",
            rich_help_panel=RUN_PANEL,
        ),
    ] = _D.workers,
    seed: Annotated[int, typer.Option("--seed")] = _D.seed,
    shuffle: Annotated[
        int, typer.Option("--shuffle", help="1: shuffle the task order of each trial.")
    ] = _D.shuffle,
    log_dir: Annotated[
        str, typer.Option("--log-dir", help="Where the results files go.")
    ] = _D.log_dir,
    few_shot_displays_path: Annotated[
        str | None,
        typer.Option("--few-shot-displays-path", help="JSONL of displays (few-shot agent)."),
    ] = None,
    data_dir: Annotated[
        str | None,
        typer.Option("--data-dir", help="τ-bench data directory (default: $TAU_BENCH_DATA)."),
    ] = None,
    max_steps: Annotated[
        int,
        typer.Option("--max-steps", help="Agent actions (tool calls + messages) per episode."),
    ] = _D.max_steps,
    max_turns: Annotated[
        int | None,
        typer.Option("--max-turns", help="Same as --max-steps (one name per setting)."),
    ] = None,
    max_tool_calls_per_turn: Annotated[
        int | None,
        typer.Option(
            "--max-tool-calls-per-turn",
            help="Run at most N tool calls of a turn (1 reproduces the original).",
        ),
    ] = None,
    output_format: Annotated[
        str,
        typer.Option(
            "--output-format",
            help="tau-bench (always written), or mt-bench (also an MT-bench folder).",
        ),
    ] = _D.output_format,
    agent_option: Annotated[
        list[str] | None,
        typer.Option("--agent-option", help="KEY=VALUE for the adapter (repeatable)."),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            help="Results log (.jsonl) of an earlier run: run only its missing or errored episodes.",
            rich_help_panel=RUN_PANEL,
        ),
    ] = None,
    provider_limit: Annotated[
        list[str] | None,
        typer.Option(
            "--provider-limit",
            help="PROVIDER=N: at most N live episodes using that provider (repeatable).",
            rich_help_panel=RUN_PANEL,
        ),
    ] = None,
    run_name: Annotated[
        str | None,
        typer.Option(
            "--run-name", help="File name stem of the results.", rich_help_panel=RUN_PANEL
        ),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", help="No progress bar.", rich_help_panel=RUN_PANEL),
    ] = False,
    agent_id: Annotated[
        str | None, typer.Option("--agent-id", rich_help_panel=ADAPTER_PANEL)
    ] = None,
    project_id: Annotated[
        str | None, typer.Option("--project-id", rich_help_panel=ADAPTER_PANEL)
    ] = None,
    location: Annotated[
        str | None, typer.Option("--location", rich_help_panel=ADAPTER_PANEL)
    ] = None,
    environment: Annotated[
        str | None, typer.Option("--environment", rich_help_panel=ADAPTER_PANEL)
    ] = None,
    language_code: Annotated[
        str | None, typer.Option("--language-code", rich_help_panel=ADAPTER_PANEL)
    ] = None,
    credentials: Annotated[
        str | None,
        typer.Option("--credentials", help="Credentials file path.", rich_help_panel=ADAPTER_PANEL),
    ] = None,
    gcp_sa_file: Annotated[
        str | None,
        typer.Option(
            "--gcp-sa-file", help="Service-account JSON path.", rich_help_panel=ADAPTER_PANEL
        ),
    ] = None,
    api_endpoint: Annotated[
        str | None, typer.Option("--api-endpoint", rich_help_panel=ADAPTER_PANEL)
    ] = None,
    session_param: Annotated[
        list[str] | None,
        typer.Option(
            "--session-param",
            help="KEY=TEMPLATE session parameter (repeatable).",
            rich_help_panel=ADAPTER_PANEL,
        ),
    ] = None,
    session_ttl: Annotated[
        str | None, typer.Option("--session-ttl", rich_help_panel=ADAPTER_PANEL)
    ] = None,
    emulator: Annotated[
        str | None,
        typer.Option(
            "--emulator", help="Address of a Dialogflow CX emulator.", rich_help_panel=ADAPTER_PANEL
        ),
    ] = None,
    http_config: Annotated[
        str | None,
        typer.Option(
            "--http-config", help="HTTP adapter config file.", rich_help_panel=ADAPTER_PANEL
        ),
    ] = None,
) -> None:
    """The flags of `tau run`, as a signature (typer reads it; `run` is the callback)."""


_ALIAS = "__underscore"


def _with_underscore_aliases(source: Any) -> inspect.Signature:
    """`ctx`, the flags of `source`, and a hidden `--under_score` twin of every dashed flag."""
    sig = inspect.signature(source, eval_str=True)
    params = [
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    ]
    aliases = []
    for p in sig.parameters.values():
        params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY))
        base, *extras = get_args(p.annotation)
        info = next((e for e in extras if isinstance(e, OptionInfo)), None)
        if info is None:
            continue
        names = [info.default, *(info.param_decls or ())]
        dashed = [n for n in names if isinstance(n, str) and "-" in n[2:]]
        if not dashed:
            continue
        under = ["--" + n[2:].replace("-", "_") for n in dashed]
        annotation = Annotated[base | None, typer.Option(*under, hidden=True)]  # type: ignore[valid-type]
        aliases.append(
            inspect.Parameter(
                p.name + _ALIAS, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation
            )
        )
    return sig.replace(parameters=params + aliases, return_annotation=None)


def run(ctx: typer.Context, **params: Any) -> None:
    """Run agents on τ-bench tasks and write tau-bench results, a JSONL log and a summary."""
    from tau_bench.config import RunConfigError

    try:
        cfg = _config_from_context(ctx)
    except RunConfigError as exc:
        fail(str(exc))
    _execute(cfg)


run.__signature__ = _with_underscore_aliases(_flags)  # type: ignore[attr-defined]


# -- flags -> RunConfig -------------------------------------------------------------------


def fail(message: str, code: int = 2) -> NoReturn:
    """One line on stderr and exit `code`. SystemExit, not typer.Exit: with
    standalone_mode=False click turns Exit into a return value and the code is lost."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(code)


def _note(message: str) -> None:
    """A status line on stderr, never wrapped (scripts grep these)."""
    print(message, file=sys.stderr, flush=True)


def _given(ctx: typer.Context) -> dict[str, Any]:
    """Parameters the user actually typed (not defaults)."""
    typed = ("COMMANDLINE", "ENVIRONMENT")
    given: dict[str, Any] = {}
    for name, value in ctx.params.items():
        if getattr(ctx.get_parameter_source(name), "name", "") not in typed:
            continue
        name = name.removesuffix(_ALIAS)
        if isinstance(value, list | tuple) and name in given:
            given[name] = [*given[name], *value]
        else:
            given[name] = value
    return given


def _task_ids(given: dict[str, Any]) -> list[int | str] | None:
    from tau_bench.config import RunConfigError, parse_task_id

    ids: list[int | str] = []
    extra = list(given.get("extra_task_ids") or [])
    if extra and "task_ids" not in given:
        raise RunConfigError(f"unexpected argument {extra[0]!r} (did you mean --task-ids?)")
    for value in [*(given.get("task_ids") or []), *extra]:
        for part in value.replace(",", " ").split():
            try:
                ids.append(parse_task_id(part))
            except ValueError:
                raise RunConfigError(
                    f"--task-ids expects integers (or DOMAIN/ID), got {part!r}"
                ) from None
    return ids if ids or "task_ids" in given else None


def cli_mapping(given: dict[str, Any]) -> dict[str, Any]:
    """Typed flags as RunConfig fields (adapter flags into agent_options)."""
    from tau_bench.config import parse_key_values

    out: dict[str, Any] = {}
    agent_options: dict[str, Any] = {}
    for name, value in given.items():
        if name in _NOT_CONFIG or name == "task_ids":
            continue
        if name in _ADAPTER_FLAGS:
            agent_options[_ADAPTER_FLAGS[name]] = (
                list(value) if isinstance(value, list | tuple) else value
            )
        elif name == "agent_option":
            agent_options.update(parse_key_values(list(value), "--agent-option"))
        elif name == "provider_limit":
            out["provider_limit"] = list(value)
        else:
            out[name] = value
    ids = _task_ids(given)
    if ids is not None:
        out["task_ids"] = ids
    if agent_options:
        out["agent_options"] = agent_options
    return out


def _resume_base(path: str) -> dict[str, Any]:
    """The resumed run's config as the lowest layer, so `--resume FILE` alone suffices."""
    from tau_bench.config import is_redacted
    from tau_bench.results import LogFileError, read_log
    from tau_bench.runner import _resolve_resume_path

    try:
        header = read_log(_resolve_resume_path(path)).header
    except LogFileError:
        return {}  # prepare_run reports it
    base = dict(header.get("config") or {})
    for key in ("resume", "run_name", "quiet"):
        base.pop(key, None)
    base["agent_options"] = {
        k: v for k, v in (base.get("agent_options") or {}).items() if not is_redacted(v)
    }
    return {k: v for k, v in base.items() if k in RunConfig.model_fields}


def _merge(*layers: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if key == "agent_options":
                options.update(value or {})
            else:
                out[key] = value
    if options:
        out["agent_options"] = options
    return out


def _config_from_context(ctx: typer.Context) -> RunConfig:
    from tau_bench.config import build_config, config_from_mapping, load_yaml

    given = _given(ctx)
    cli = config_from_mapping(cli_mapping(given))
    yaml_layer = load_yaml(given["config"]) if given.get("config") else {}
    resume = cli.get("resume") or yaml_layer.get("resume")
    base = _resume_base(str(resume)) if resume else {}
    return build_config(_merge(base, yaml_layer, cli))


# -- running ------------------------------------------------------------------------------


def _execute(cfg: RunConfig) -> None:
    import asyncio

    from rich.console import Console

    from tau_bench.config import RunConfigError
    from tau_bench.data.paths import DataDirError
    from tau_bench.domains import UnknownDomainError, UnknownSplitError
    from tau_bench.runner import Runner, prepare_run
    from tau_bench.tasks import TaskFileError

    try:
        plan = prepare_run(cfg)
    except (
        RunConfigError,
        TaskFileError,
        UnknownDomainError,
        UnknownSplitError,
        DataDirError,
    ) as exc:
        fail(str(exc))
    err = Console(stderr=True)
    observer = RichProgress(err, enabled=not cfg.quiet and err.is_terminal)
    runner = Runner(plan, observer)
    if plan.resumed:
        _note(
            f"resuming {plan.log_path}: {len(plan.order) - len(plan.pending)} of "
            f"{len(plan.order)} episodes done, {len(plan.pending)} to run"
        )
    try:
        outcome = asyncio.run(runner.run())
    except RunConfigError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        done = runner.outcome.summary["episodes_done"] if runner.outcome else 0
        _note(
            f"interrupted: {done} of {len(plan.order)} episodes saved in {plan.log_path}; "
            f"continue with: tau run --resume {plan.log_path}"
        )
        raise SystemExit(130) from None
    Console().print(render_summary(outcome.summary))
    summary = outcome.summary
    for line in summary.get("worker_errors", []):
        _note(f"error: {line}")
    if "mt_bench_error" in summary.get("files", {}):
        _note(f"warning: the mt-bench export failed: {summary['files']['mt_bench_error']}")
    if summary["errors"]:
        _note(
            f"{summary['errors']} episode(s) failed with errors (not scored); "
            f"re-run them with: tau run --resume {plan.log_path}"
        )
        for line in _error_examples(outcome.records):
            _note(line)
        if not summary["episodes_scored"]:
            raise SystemExit(1)  # nothing could be scored: let scripts notice
    if summary.get("worker_errors"):
        _note(f"re-run the missing episodes with: tau run --resume {plan.log_path}")
        raise SystemExit(1)


def _error_examples(records: Any, limit: int = 3) -> list[str]:
    """One line per distinct error (kind and message), most frequent first."""
    from collections import Counter

    counts: Counter[tuple[str, str, str]] = Counter()
    for record in records:
        error = getattr(record, "error", None)
        if error:
            counts[
                (error.get("source", "?"), error.get("kind", "?"), error.get("message", ""))
            ] += 1
    lines = []
    for (source, kind, message), n in counts.most_common(limit):
        short = message if len(message) <= 300 else message[:297] + "..."
        lines.append(f"  {n} x {source} {kind}: {short}")
    if len(counts) > limit:
        lines.append(f"  ... and {len(counts) - limit} other error(s): see the results log")
    return lines


class RichProgress:
    """done/total, running pass rate, cost so far and ETA on stderr (TTY only)."""

    def __init__(self, console: Any, enabled: bool) -> None:
        self.console = console
        self.enabled = enabled
        self._progress: Any = None
        self._task: Any = None
        self._scored = 0
        self._passed = 0
        self._cost = 0.0
        self._errors = 0

    def started(self, total: int, done: list[Any]) -> None:
        from tau_bench.results import is_success

        for r in done:
            self._count(r, is_success)
        if not self.enabled:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("[bold]episodes"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("pass {task.fields[rate]}"),
            TextColumn("${task.fields[cost]:.4f}"),
            TextColumn("errors {task.fields[errors]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(
            "run",
            total=total,
            completed=len(done),
            rate=self._rate(),
            cost=self._cost,
            errors=self._errors,
        )

    def _count(self, record: Any, is_success: Any) -> None:
        self._cost += record.agent_cost + record.user_cost
        if record.is_error:
            self._errors += 1
        else:
            self._scored += 1
            self._passed += 1 if is_success(record.reward) else 0

    def _rate(self) -> str:
        return f"{self._passed / self._scored:.1%}" if self._scored else "-"

    def episode_done(self, record: Any) -> None:
        from tau_bench.results import is_success

        self._count(record, is_success)
        if self._progress is not None:
            self._progress.update(
                self._task, advance=1, rate=self._rate(), cost=self._cost, errors=self._errors
            )

    def finished(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def _fmt(value: Any, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def render_summary(summary: dict[str, Any]) -> Any:
    """The summary as a rich table."""
    from rich.table import Table

    table = Table(title=f"τ-bench run {summary.get('run_name', '')}", show_header=False)
    table.add_column("metric", style="bold")
    table.add_column("value", justify="right")
    table.add_row(
        "episodes",
        f"{summary['episodes_done']} / {summary['episodes_planned']} "
        f"({summary['episodes_scored']} scored)",
    )
    table.add_row("errors (not scored)", str(summary["errors"]))
    table.add_row("average reward", _fmt(summary["avg_reward"], ".4f"))
    for k, v in summary["pass_hat_k"].items():
        table.add_row(f"pass^{k}", _fmt(v, ".4f"))
    for title, key in (("user", "by_user_model"), ("domain", "by_domain")):
        groups = summary.get(key) or {}
        if len(groups) < 2:
            continue
        for name, group in groups.items():
            table.add_row(
                f"{title} {name}",
                f"reward {_fmt(group['avg_reward'], '.4f')}, "
                f"pass^1 {_fmt(group['pass_hat_k'].get('1'), '.4f')} "
                f"({group['scored']} scored)",
            )
    cost = summary["cost"]
    table.add_row("cost agent / user", f"${cost['agent']:.4f} / ${cost['user']:.4f}")
    tokens = summary["tokens"]
    for side in ("agent", "user"):
        t = tokens[side]
        table.add_row(
            f"tokens {side} (in / out)", f"{t['prompt_tokens']} / {t['completion_tokens']}"
        )
    lat = summary["latency"]
    table.add_row(
        "agent turn p50 / p95 (s)",
        f"{_fmt(lat['agent_turn']['p50'])} / {_fmt(lat['agent_turn']['p95'])}",
    )
    table.add_row(
        "episode p50 / p95 (s)", f"{_fmt(lat['episode']['p50'])} / {_fmt(lat['episode']['p95'])}"
    )
    if "wall_time" in summary:
        table.add_row("wall time (s)", _fmt(summary["wall_time"], ".1f"))
    files = summary.get("files", {})
    if files:
        table.add_row("results", files.get("results", ""))
    if files.get("mt_bench"):
        table.add_row("mt-bench", files["mt_bench"])
    return table


def standalone_app() -> typer.Typer:
    """The `run` command as a program of its own (`python run.py ...`)."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command(
        name="run",
        help="Run agents on τ-bench tasks (the τ-bench run.py flags).",
        context_settings={"allow_interspersed_args": True},
    )(run)
    return app


def main() -> int:
    """`python run.py ...`: exactly `tau run ...` (same flags, messages, exit codes)."""
    from tau_bench.cli.errors import run_cli

    return run_cli(standalone_app())
