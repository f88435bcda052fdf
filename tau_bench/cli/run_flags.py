"""The flags of `tau run` / `python run.py`, and how they become a RunConfig.

Core flags are declared here, each with a hidden `--under_score` twin (the original
run.py's spellings). The chosen adapter's own flags (`--agent-id`, `--http-config`, ...)
are declared by the adapter (`tau_adapters.options`): click leaves unknown options to a
hidden positional list, and `split_adapter_args` parses them against the adapter's
options. Settings layer as defaults < the resumed run's config < `--config` YAML <
command line. `--task-ids 1 2 3` works as argparse's nargs="+" did: the values after the
flag land in the same hidden positional list.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any, get_args

import typer
from typer.models import OptionInfo

from tau_bench.config import RunConfig

_D = RunConfig()
RUN_PANEL = "Run control"
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
            help="Agent: tool-calling, act, react, few-shot, oracle, or an installed adapter "
            "(its own flags: tau adapters NAME).",
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
            help="Run only these task ids: --task-ids 0-4 7 9-12 (retail/3 across domains).",
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
            help="Ray workers running episodes (each gets max-concurrency / N); "
            "alone, N > 1 starts a local Ray (pip install 'tau-adapters[ray]').",
            rich_help_panel=RUN_PANEL,
        ),
    ] = _D.workers,
    backend: Annotated[
        str,
        typer.Option(
            "--backend",
            help="Where episodes run: local (this process) or ray (--workers Ray workers).",
            rich_help_panel=RUN_PANEL,
        ),
    ] = _D.backend,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            help="Ray cluster to run on (ray://host:10001, host:6379, auto); "
            "default: a local Ray. Implies --backend ray.",
            rich_help_panel=RUN_PANEL,
        ),
    ] = None,
    llm_path: Annotated[
        str,
        typer.Option(
            "--llm-path",
            help="Model calls: auto (direct where exact), litellm, or direct "
            "(the openai client, for OpenAI-compatible endpoints).",
            rich_help_panel=RUN_PANEL,
        ),
    ] = _D.llm_path,
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
    judge_model: Annotated[
        str | None,
        typer.Option(
            "--judge-model",
            help="τ³: the NL-assertion judge model (default gpt-4.1-2025-04-14; "
            "assume-met: every NL assertion counts as met, offline).",
        ),
    ] = None,
    max_steps: Annotated[
        int,
        typer.Option("--max-steps", help="Agent actions (tool calls + messages) per episode."),
    ] = _D.max_steps,
    max_tool_calls_per_turn: Annotated[
        int | None,
        typer.Option(
            "--max-tool-calls-per-turn",
            help="Run at most N tool calls of a turn (1 reproduces the original).",
        ),
    ] = None,
    platform_price_per_request: Annotated[
        float | None,
        typer.Option(
            "--platform-price-per-request",
            help="USD a hosted platform charges per agent request (default: unknown).",
        ),
    ] = None,
    output_format: Annotated[
        str,
        typer.Option("--output-format", help="tau-bench (MT-bench files: tau export)."),
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
    skip_preflight: Annotated[
        bool,
        typer.Option(
            "--skip-preflight",
            help="Do not check agent, user and judge before the first episode.",
            rich_help_panel=RUN_PANEL,
        ),
    ] = False,
    max_consecutive_failures: Annotated[
        int,
        typer.Option(
            "--max-consecutive-failures",
            help="Stop scheduling after N infrastructure failures of one kind in a row (0: never).",
            rich_help_panel=RUN_PANEL,
        ),
    ] = _D.max_consecutive_failures,
    episode_timeout: Annotated[
        float,
        typer.Option(
            "--episode-timeout",
            help="Seconds one episode may take; then it is an agent timeout.",
            rich_help_panel=RUN_PANEL,
        ),
    ] = _D.episode_timeout,
    turn_timeout: Annotated[
        float,
        typer.Option(
            "--turn-timeout",
            help="Seconds one agent reply or one user reply may take.",
            rich_help_panel=RUN_PANEL,
        ),
    ] = _D.turn_timeout,
) -> None:
    """The flags of `tau run`, as a signature (typer reads it; `run` is the callback)."""


_ALIAS = "__underscore"


def with_underscore_aliases(source: Any) -> inspect.Signature:
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


def _task_ids(given: dict[str, Any], extra: list[str]) -> list[int | str] | None:
    from tau_bench.config import RunConfigError
    from tau_bench.task_ids import expand_task_ids

    ids: list[int | str] = []
    if extra and "task_ids" not in given:
        raise RunConfigError(f"unexpected argument {extra[0]!r} (did you mean --task-ids?)")
    for value in [*(given.get("task_ids") or []), *extra]:
        for part in value.replace(",", " ").split():
            try:
                ids.extend(expand_task_ids(part))
            except ValueError as exc:
                raise RunConfigError(
                    f"--task-ids expects integers, ranges (0-4) or DOMAIN/ID, got {part!r}"
                    + (f": {exc}" if "range" in str(exc) else "")
                ) from None
    return ids if ids or "task_ids" in given else None


def cli_mapping(given: dict[str, Any], strategy: str) -> dict[str, Any]:
    """Typed flags as RunConfig fields; the adapter's own flags into agent_options."""
    from tau_bench.config import parse_key_values

    extra, agent_options = split_adapter_args(
        str(strategy), list(given.get("extra_task_ids") or [])
    )
    out: dict[str, Any] = {}
    for name, value in given.items():
        if name in _NOT_CONFIG or name == "task_ids":
            continue
        if name == "agent_option":
            agent_options.update(parse_key_values(list(value), "--agent-option"))
        elif name == "provider_limit":
            out["provider_limit"] = list(value)
        else:
            out[name] = value
    ids = _task_ids(given, extra)
    if ids is not None:
        out["task_ids"] = ids
    if agent_options:
        out["agent_options"] = agent_options
    return out


def _resume_base(path: str) -> dict[str, Any]:
    """The resumed run's config as the lowest layer, so `--resume FILE` alone suffices."""
    from tau_adapters.redaction import is_redacted
    from tau_bench.results import LogFileError, read_log
    from tau_bench.runner.plan import resolve_resume_path

    try:
        header = read_log(resolve_resume_path(path)).header
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
    """Later layers win, key by key; adapter options merge option by option."""
    from tau_bench.config.layers import ADAPTER_SETTINGS

    out: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if key in ("agent_options", ADAPTER_SETTINGS):
                out[key] = {**out.get(key, {}), **(value or {})}
            else:
                out[key] = value
    return out


def config_from_context(ctx: typer.Context) -> RunConfig:
    from tau_bench.config import build_config, config_from_mapping, load_yaml

    given = _given(ctx)
    yaml_layer = load_yaml(given["config"]) if given.get("config") else {}
    resume = given.get("resume") or yaml_layer.get("resume")
    base = _resume_base(str(resume)) if resume else {}
    strategy = str(
        given.get("agent_strategy")
        or yaml_layer.get("agent_strategy")
        or base.get("agent_strategy")
        or _D.agent_strategy
    )
    cli = config_from_mapping(cli_mapping(given, strategy))
    return build_config(_merge(base, yaml_layer, cli))


def split_adapter_args(strategy: str, args: list[str]) -> tuple[list[str], dict[str, Any]]:
    """Leftover command-line words: (task ids, the adapter's options from its flags).

    A usage error (click's) for a flag the adapter does not declare.
    """
    # typer 0.29 parses with its own vendored click: its usage errors are the ones it shows.
    from typer._click.exceptions import UsageError

    from tau_adapters.extras import MissingExtraError
    from tau_adapters.options import option_flags, options_model
    from tau_adapters.registry import UnknownAdapterError, load_builder

    if not any(a.startswith("-") for a in args):
        return args, {}
    try:
        model = options_model(load_builder(strategy))
    except MissingExtraError:
        raise  # "install tau-adapters[x]": the flags belong to an adapter not installed
    except (UnknownAdapterError, ImportError):
        model = None
    flags = option_flags(model) if model is not None else []
    by_flag = {spelling: f for f in flags for spelling in f.flags}
    ids: list[str] = []
    options: dict[str, Any] = {}
    i = 0
    while i < len(args):
        word = args[i]
        name, eq, inline = word.partition("=")
        if not word.startswith("--") or word == "--":
            ids.append(word)
            i += 1
            continue
        spec = by_flag.get(name)
        if spec is None:
            hint = f" (the {strategy!r} agent's flags: tau adapters {strategy})" if flags else ""
            raise UsageError(f"No such option: {name}{hint}")
        if spec.is_switch and not eq:
            value: Any = True
            i += 1
        elif eq:
            value = inline
            i += 1
        elif i + 1 < len(args):
            value = args[i + 1]
            i += 2
        else:
            raise UsageError(f"Option '{name}' requires an argument.")
        if spec.multiple:
            options.setdefault(spec.field, []).append(value)
        else:
            options[spec.field] = value
    return ids, options
