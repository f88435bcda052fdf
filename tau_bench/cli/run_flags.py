"""The flags of `tau run` / `python run.py`: one signature typer reads.

Core flags are declared here, each with a hidden `--under_score` twin (the original
run.py's spellings). How the typed flags become a RunConfig (layering, task ids, the
adapter's own flags) is `run_layers`.
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
            help="Domain: retail, airline (τ-bench) or tau3/airline, tau3/retail, "
            "tau3/telecom (τ³); several: retail,airline (ids become retail/N).",
        ),
    ] = _D.env,
    agent_strategy: Annotated[
        str,
        typer.Option(
            "--agent-strategy",
            help="Agent: tool-calling, act, react, few-shot, tau3-llm, oracle, or an installed "
            "adapter: decibel, http, a2a, ces... (its own flags: tau adapters NAME).",
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
            help="User simulator: llm, react, verify, reflection, tau3 (τ³'s own), human, "
            "scripted (offline).",
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
            "alone, N > 1 starts a local Ray (pip install 'tau-adapters\\[ray]').",
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
        typer.Option(
            "--data-dir",
            help="Benchmark data directory (default: $TAU_BENCH_DATA, or $TAU3_BENCH_DATA for "
            "tau3/ domains).",
        ),
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
            help="NAME=N: at most N model calls at once to that provider, or N live episodes "
            "of the hosted agent so named (decibel=5); repeatable.",
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


ALIAS_SUFFIX = "__underscore"


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
                p.name + ALIAS_SUFFIX,
                inspect.Parameter.KEYWORD_ONLY,
                default=None,
                annotation=annotation,
            )
        )
    return sig.replace(parameters=params + aliases, return_annotation=None)
