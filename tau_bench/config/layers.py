"""Run settings from layers: defaults < a resumed run < a YAML file < the command line.

Each layer is a mapping of setting names (dashes or underscores) to values;
`config_from_mapping` normalises one, `build_config` validates the merged result.
Settings that are not `RunConfig` fields belong to the chosen adapter: they go into
`agent_options` when the adapter's options model declares them, and are refused
otherwise, so a typo never passes silently.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from tau_adapters import jsonsafe
from tau_bench.bounded_files import FileTooLarge, NotRegularFile, read_regular
from tau_bench.config.run_config import (
    RunConfig,
    RunConfigError,
    _as_list,
    path_option_names,
)

# Where `config_from_mapping` keeps settings that are not RunConfig fields (the adapter's).
ADAPTER_SETTINGS = "__adapter_settings__"

MAX_CONFIG_SIZE = 1024 * 1024
"""Largest config file read (bytes): `tau run --config`, `tau eval --config`, `tau serve
--agent-configs` / `--scores-config`. A real one is a few KB, so 1 MiB is hundreds of
times that; anything larger (a sparse file, a log named by mistake) is refused before it
is read, not decoded into memory."""


def normalize_key(key: str) -> str:
    return key.strip().replace("-", "_")


def split_key_value(item: str, flag: str) -> tuple[str, str]:
    """`"a=1"` -> `("a", "1")`, the key stripped but otherwise as written; a clear error
    for a missing `=` or key."""
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise RunConfigError(f"{flag} expects KEY=VALUE, got {item!r}")
    return key.strip(), value


def parse_key_values(items: list[str], flag: str) -> dict[str, str]:
    """`["a=1", "b=2"]` -> `{"a": "1", "b": "2"}`, keys normalised as setting names."""
    out: dict[str, str] = {}
    for item in items:
        key, value = split_key_value(item, flag)
        out[normalize_key(key)] = value
    return out


def config_from_mapping(data: dict[str, Any]) -> dict[str, Any]:
    """Normalise a YAML/CLI mapping to RunConfig fields.

    Accepts dashed or underscored keys and the CLI's singular names (`provider_limit`,
    `agent_option`). Keys that are not RunConfig fields are kept aside
    (`ADAPTER_SETTINGS`): `build_config` gives them to the chosen adapter when its options
    declare them, and refuses them otherwise.
    """
    out: dict[str, Any] = {}
    agent_options: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = normalize_key(str(raw_key))
        if key in ("provider_limit", "provider_limits"):
            out["provider_limits"] = _limits(value)
        elif key in ("agent_option", "agent_options"):
            if isinstance(value, list):
                agent_options.update(parse_key_values([str(v) for v in value], "agent_option"))
            elif isinstance(value, dict):
                agent_options.update({normalize_key(str(k)): v for k, v in value.items()})
            else:
                raise RunConfigError("agent_options must be a mapping or a list of KEY=VALUE")
        elif key == ADAPTER_SETTINGS:  # an already normalised layer
            out.setdefault(ADAPTER_SETTINGS, {}).update(value)
        elif key not in RunConfig.model_fields:
            out.setdefault(ADAPTER_SETTINGS, {})[key] = value
        elif (key == "task_ids" and value is not None) or (
            key == "user_models" and isinstance(value, str)
        ):
            out[key] = _as_list(value)
        else:
            out[key] = value
    if agent_options:
        out["agent_options"] = agent_options
    return out


def _limits(value: Any) -> dict[str, int]:
    """Provider limits from a YAML mapping or `NAME=N` items (the command line), the same
    mapping either way. A name is data (a provider, or the agent strategy a hosted agent is
    capped by), not a setting: kept as written (`dialogflow-cx` stays dashed) so that the
    runner's lookup by strategy name finds it. One name with two values is refused."""
    items: list[tuple[str, Any]]
    if isinstance(value, dict):
        items = [(str(k).strip(), v) for k, v in value.items()]
    else:
        items = [split_key_value(str(v), "provider_limit") for v in _as_list(value)]
    out: dict[str, int] = {}
    for name, limit in items:
        number = _whole_number(limit)
        if number is None:
            raise RunConfigError(f"provider limit for {name!r} must be an integer, got {limit!r}")
        if out.get(name, number) != number:
            raise RunConfigError(
                f"provider limit for {name!r} given twice ({out[name]} and {number}): give it once"
            )
        out[name] = number
    return out


def _whole_number(value: Any) -> int | None:
    """`value` as an int when it is one (`5`, `"5"`, `5.0`); None for `true`, `2.7`,
    `.inf`, `nan` or text that is not a number: a limit is never rounded silently."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def load_yaml(path: str | Path) -> dict[str, Any]:
    """A run config file: a YAML mapping of flag names to values."""
    return config_from_mapping(read_yaml_mapping(path))


def read_yaml_mapping(path: str | Path) -> dict[str, Any]:
    """A YAML file that must hold a mapping (or nothing), keys as written."""
    import yaml

    p = Path(path)
    try:
        text = read_config_bytes(p).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RunConfigError(
            f"{p}: not UTF-8 text (byte {exc.start}); a config file is YAML in UTF-8"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RunConfigError(f"{p}: not valid YAML ({str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise RunConfigError(f"{p}: nested too deep to read") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise RunConfigError(f"{p}: expected a mapping of flag names to values")
    problem = jsonsafe.size_problem(data)
    if problem is not None:
        raise RunConfigError(f"{p}: {problem}")
    return data


def read_config_bytes(path: Path) -> bytes:
    """The bytes of config file `path`, refused (`RunConfigError`, one line naming it)
    unless it is a regular file of at most `MAX_CONFIG_SIZE` bytes
    (`bounded_files.read_regular`: a device would be read without end, a FIFO waited on
    for a writer that never comes)."""
    try:
        return read_regular(path, MAX_CONFIG_SIZE)
    except NotRegularFile:
        raise RunConfigError(
            f"config file {path} is not a regular file (a config is a YAML file)"
        ) from None
    except FileTooLarge:
        raise RunConfigError(_too_large(path)) from None
    except OSError as exc:
        raise RunConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None


def _too_large(path: Path) -> str:
    return (
        f"config file {path} is larger than {MAX_CONFIG_SIZE // 1024**2} MiB: "
        "not a config file tau reads"
    )


def build_config(data: dict[str, Any]) -> RunConfig:
    """Validate `data` into a RunConfig; the first problem as a one-line error.

    The adapter named by `agent_strategy` validates its `agent_options` when it declares
    an options model (`tau_adapters.options`): an unknown or ill-typed one fails here.
    """
    data = dict(data)
    loose = data.pop(ADAPTER_SETTINGS, None) or {}
    if loose:
        strategy = str(
            data.get("agent_strategy") or RunConfig.model_fields["agent_strategy"].default
        )
        model = _options_model(strategy)
        for key, value in loose.items():
            if model is None or key not in model.model_fields:
                raise RunConfigError(f"{key}: unknown setting")
            data["agent_options"] = {**(data.get("agent_options") or {}), key: value}
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        msg = str(first["msg"]).removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            msg = "unknown setting"
        raise RunConfigError(f"{where}: {msg}") from None
    check_agent_options(config)
    return config


PATH_SETTINGS = ("data_dir", "tasks_file", "few_shot_displays_path")
"""The run settings that name a file or a folder (the adapters mark their own:
`path_option_names`)."""


def absolute_paths(config: RunConfig, recorded: Mapping[str, Any]) -> RunConfig:
    """`config` with the files it names given as absolute paths, so the run's header
    records where they are: `tau run --resume` from another folder reads the same files,
    and `./bot.yaml` and `bot.yaml` are one file, not a configuration that differs.

    `recorded` is the resumed run's config (empty for a new run). Its values are kept as
    written, a relative path of a log from before included: a setting taken from it, or
    given again naming the same file, keeps the recorded spelling (and so the log's
    fingerprint and agent hash)."""
    recorded_options = recorded.get("agent_options")
    if not isinstance(recorded_options, Mapping):
        recorded_options = {}

    def fixed(value: Any, before: Any) -> Any:
        if not isinstance(value, str) or not value or value == before:
            return value
        absolute = os.path.abspath(os.path.expanduser(value))
        same = isinstance(before, str) and before != ""
        if same and os.path.abspath(os.path.expanduser(before)) == absolute:
            return before
        return absolute

    names = path_option_names(config.agent_strategy)
    options = {
        key: fixed(value, recorded_options.get(key)) if key in names else value
        for key, value in config.agent_options.items()
    }
    update: dict[str, Any] = {
        key: fixed(getattr(config, key), recorded.get(key)) for key in PATH_SETTINGS
    }
    return config.model_copy(update={**update, "agent_options": options})


def _options_model(strategy: str) -> type[BaseModel] | None:
    from tau_adapters.options import options_model
    from tau_adapters.registry import UnknownAdapterError, load_builder

    try:
        return options_model(load_builder(strategy))
    except (UnknownAdapterError, ImportError):
        return None  # reported when the run builds its agent, with the available names


def check_agent_options(config: RunConfig) -> None:
    """The adapter's own check of its options (nothing for adapters without a model)."""
    from tau_adapters.options import validate_options
    from tau_adapters.protocol import AdapterConfigError

    model = _options_model(config.agent_strategy)
    if model is None:
        return
    try:
        validate_options(config.agent_strategy, model, config.agent_options)
    except AdapterConfigError as exc:
        raise RunConfigError(str(exc)) from None


def fingerprint_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Human-readable `field: old -> new` lines for fingerprints that differ."""
    diffs = []
    for key in sorted(set(old) | set(new)):
        if key == "agent_options":
            a, b = old.get(key) or {}, new.get(key) or {}
            for opt in sorted(set(a) | set(b)):
                if a.get(opt) != b.get(opt):
                    diffs.append(f"agent option {opt}: {a.get(opt)!r} -> {b.get(opt)!r}")
        elif old.get(key) != new.get(key):
            diffs.append(f"{key}: {old.get(key)!r} -> {new.get(key)!r}")
    return diffs
