"""How the flags of `tau run` become a RunConfig.

Settings layer as defaults < the resumed run's config < `--config` YAML < command line.
The chosen adapter's own flags (`--agent-id`, `--http-config`, ...) are declared by the
adapter (`tau_adapters.options`): click leaves unknown options to a hidden positional
list, and `split_adapter_args` parses them against the adapter's options. `--task-ids
1 2 3` works as argparse's nargs="+" did: the values after the flag land in the same
hidden positional list.
"""

from __future__ import annotations

from typing import Any

import typer

from tau_bench.cli.run_flags import ALIAS_SUFFIX
from tau_bench.config import RunConfig

_D = RunConfig()
_NOT_CONFIG = frozenset({"config", "extra_task_ids"})


def _given(ctx: typer.Context) -> dict[str, Any]:
    """Parameters the user actually typed (not defaults)."""
    typed = ("COMMANDLINE", "ENVIRONMENT")
    given: dict[str, Any] = {}
    for name, value in ctx.params.items():
        if getattr(ctx.get_parameter_source(name), "name", "") not in typed:
            continue
        name = name.removesuffix(ALIAS_SUFFIX)
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
    from tau_bench.results_log import LogFileError, read_log
    from tau_bench.runner.plan import resolve_resume_path

    try:
        header = read_log(resolve_resume_path(path)).header
    except LogFileError:
        return {}  # prepare_run reports it
    config, options = header.get("config"), None
    if not isinstance(config, dict):
        return {}  # a malformed header: prepare_run reports it, naming the file
    base = dict(config)
    for key in ("resume", "run_name", "quiet"):
        base.pop(key, None)
    options = base.get("agent_options")
    base["agent_options"] = {
        k: v
        for k, v in (options if isinstance(options, dict) else {}).items()
        if not is_redacted(v)
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


def config_from_context(ctx: typer.Context) -> tuple[RunConfig, frozenset[str]]:
    """The run's config, and the settings the user set (flags, `--config`): what a
    resumed run does not use is then said, not silently dropped."""
    from tau_bench.config import (
        RunConfigError,
        absolute_paths,
        backend_conflict,
        build_config,
        config_from_mapping,
        load_yaml,
    )

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
    merged = _merge(base, yaml_layer, cli)
    chosen = cli.get("backend", yaml_layer.get("backend"))  # the resumed run's is no choice
    if chosen == "local":  # a resume moved off Ray: the resumed run's Ray settings go
        for key in ("workers", "ray_address"):
            if key not in cli and key not in yaml_layer:
                merged.pop(key, None)
    problem = backend_conflict(chosen, merged.get("workers"), merged.get("ray_address"))
    if problem is not None:
        raise RunConfigError(problem)
    return absolute_paths(build_config(merged), base), frozenset(yaml_layer) | frozenset(cli)


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
    switched_off = {spelling: f for f in flags for spelling in f.off_flags}
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
        if name not in by_flag and name in switched_off and not eq:
            options[switched_off[name].field] = False
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
