"""RunConfig: everything one `tau run` needs, from flags, a YAML file or code.

Field names follow τ-bench's run.py (`agent_strategy`, `task_split`, ...) so a YAML file
reads like the original command line. Adapter-specific settings (Dialogflow agent id,
HTTP config file, ...) live in `agent_options`: the core does not know them, it passes
them to the adapter builder. `fingerprint()` is the subset that changes results: a run
may only be resumed under the same fingerprint.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

DEFAULT_MAX_STEPS = 30
OUTPUT_FORMATS = ("tau-bench",)
PLANNED_OUTPUT_FORMATS = ("mt-bench",)

# Adapter flags `tau run` accepts on behalf of the Dialogflow CX and HTTP adapters; they
# land in `agent_options` under these keys (list-valued ones are repeatable flags).
ADAPTER_OPTION_KEYS = (
    "agent_id",
    "project_id",
    "location",
    "environment",
    "language_code",
    "credentials",
    "gcp_sa_file",
    "api_endpoint",
    "session_params",
    "session_ttl",
    "emulator",
    "http_config",
)
ADAPTER_LIST_KEYS = frozenset({"session_params"})

# Fields that do not change what an episode scores: excluded from the fingerprint.
_NOT_RESULT_FIELDS = frozenset(
    {
        "num_trials",
        "start_index",
        "end_index",
        "task_ids",
        "shuffle",
        "max_concurrency",
        "log_dir",
        "resume",
        "provider_limits",
        "output_format",
        "quiet",
        "data_dir",
        "api_base",
        "user_api_base",
        "tasks_file",
        "run_name",
    }
)
_SECRET_HINTS = ("key", "token", "secret", "password", "passwd", "authorization", "bearer")


class RunConfigError(ValueError):
    """A configuration the runner cannot use; the message says which value and why."""


class RunConfig(BaseModel):
    """One evaluation run. Defaults are τ-bench run.py's where it had one."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    env: str = "retail"
    agent_strategy: str = "tool-calling"
    model: str | None = None
    model_provider: str | None = None
    api_base: str | None = None
    temperature: float = 0.0
    user_strategy: str = "llm"
    user_model: str = "gpt-4o"
    user_model_provider: str | None = None
    user_api_base: str | None = None
    user_temperature: float | None = None
    user_affirmative: str | None = None
    task_split: str = "test"
    start_index: int = 0
    end_index: int = -1
    task_ids: list[int] | None = None
    tasks_file: str | None = None
    num_trials: int = Field(default=1, ge=1)
    max_concurrency: int = Field(default=1, ge=1)
    seed: int = 10
    shuffle: int = 0
    log_dir: str = "results"
    few_shot_displays_path: str | None = None
    data_dir: str | None = None
    max_steps: int = Field(default=DEFAULT_MAX_STEPS, ge=1)
    max_tool_calls_per_turn: int | None = Field(default=None, ge=1)
    resume: str | None = None
    provider_limits: dict[str, int] = Field(default_factory=dict)
    output_format: str = "tau-bench"
    agent_options: dict[str, Any] = Field(default_factory=dict)
    run_name: str | None = None
    quiet: bool = False

    @field_validator("output_format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        if value in PLANNED_OUTPUT_FORMATS:
            raise ValueError(f"output format {value!r} is not implemented yet")
        if value not in OUTPUT_FORMATS:
            raise ValueError(f"unknown output format {value!r} (available: tau-bench)")
        return value

    @field_validator("provider_limits")
    @classmethod
    def _positive_limits(cls, value: dict[str, int]) -> dict[str, int]:
        for name, limit in value.items():
            if limit < 1:
                raise ValueError(f"provider limit for {name!r} must be at least 1")
        return value

    def model_post_init(self, __context: Any) -> None:
        # The short form `--model openai/gpt-4o`: the provider is the model's prefix.
        if self.model_provider is None and self.model and "/" in self.model:
            object.__setattr__(self, "model_provider", self.model.split("/", 1)[0])
        if self.user_model_provider is None and "/" in self.user_model:
            object.__setattr__(self, "user_model_provider", self.user_model.split("/", 1)[0])

    # -- views ------------------------------------------------------------------

    def adapter_options(self) -> dict[str, Any]:
        """What the adapter builder receives: the config merged with `agent_options`."""
        options = self.model_dump(exclude={"agent_options"})
        options.update(self.agent_options)
        return options

    def user_options(self) -> dict[str, Any]:
        """Keyword arguments for `tau_bench.users.build_user` (one user model for now;
        unset ones are left out so the simulator's own defaults apply)."""
        options = {
            "model": self.user_model,
            "provider": self.user_model_provider,
            "api_base": self.user_api_base,
            "temperature": self.user_temperature,
            "seed": self.seed,
            "affirmative": self.user_affirmative,
        }
        return {k: v for k, v in options.items() if v is not None}

    def fingerprint(self) -> dict[str, Any]:
        """The fields that change results (secrets hashed): resume requires equality."""
        data = self.model_dump(exclude=set(_NOT_RESULT_FIELDS))
        data["agent_options"] = redact(self.agent_options)
        return data

    def public_dict(self) -> dict[str, Any]:
        """The whole config for result headers, with secret-looking options hashed."""
        data = self.model_dump()
        data["agent_options"] = redact(self.agent_options)
        return data


def is_secret_key(key: str) -> bool:
    lowered = key.lower()
    return any(hint in lowered for hint in _SECRET_HINTS)


def redact(options: dict[str, Any]) -> dict[str, Any]:
    """Replace values of secret-looking keys with a short hash (comparable, not usable)."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if is_secret_key(key) and value is not None:
            digest = hashlib.sha256(str(value).encode("utf-8")).hexdigest()[:16]
            out[key] = f"<redacted sha256:{digest}>"
        else:
            out[key] = value
    return out


def is_redacted(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("<redacted sha256:")


def normalize_key(key: str) -> str:
    return key.strip().replace("-", "_")


def parse_key_values(items: list[str], flag: str) -> dict[str, str]:
    """`["a=1", "b=2"]` -> `{"a": "1", "b": "2"}`; a clear error for a missing `=`."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise RunConfigError(f"{flag} expects KEY=VALUE, got {item!r}")
        out[normalize_key(key)] = value
    return out


def config_from_mapping(data: dict[str, Any]) -> dict[str, Any]:
    """Normalise a YAML/CLI mapping to RunConfig fields.

    Accepts dashed or underscored keys, the CLI's singular names (`provider_limit`,
    `agent_option`, `session_param`) and adapter options at the top level.
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
        elif key in ("session_param", "session_params"):
            agent_options["session_params"] = _as_list(value)
        elif key in ADAPTER_OPTION_KEYS:
            agent_options[key] = value
        elif key == "task_ids" and value is not None:
            out[key] = _as_list(value)
        else:
            out[key] = value
    if agent_options:
        out["agent_options"] = agent_options
    return out


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        return [v for v in value.replace(",", " ").split() if v]
    return [value]


def _limits(value: Any) -> dict[str, int]:
    if isinstance(value, dict):
        items = {str(k): v for k, v in value.items()}
    else:
        items = parse_key_values([str(v) for v in _as_list(value)], "provider_limit")
    out: dict[str, int] = {}
    for name, limit in items.items():
        try:
            out[name] = int(limit)
        except (TypeError, ValueError):
            raise RunConfigError(
                f"provider limit for {name!r} must be an integer, got {limit!r}"
            ) from None
    return out


def load_yaml(path: str | Path) -> dict[str, Any]:
    """A run config file: a YAML mapping of flag names to values."""
    import yaml

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise RunConfigError(f"cannot read config file {p}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RunConfigError(f"{p}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise RunConfigError(f"{p}: expected a mapping of flag names to values")
    return config_from_mapping(data)


def build_config(data: dict[str, Any]) -> RunConfig:
    """Validate `data` into a RunConfig; the first problem as a one-line error."""
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        msg = str(first["msg"]).removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            msg = "unknown setting"
        raise RunConfigError(f"{where}: {msg}") from None


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
