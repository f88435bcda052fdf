"""RunConfig: everything one `tau run` needs, from flags, a YAML file or code.

Field names follow τ-bench's run.py (`agent_strategy`, `task_split`, ...) so a YAML file
reads like the original command line. Adapter-specific settings (Dialogflow agent id,
HTTP config file, ...) live in `agent_options`: the core does not know them, it passes
them to the adapter builder. `fingerprint()` is the subset that changes results: a run
may only be resumed under the same fingerprint.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

DEFAULT_MAX_STEPS = 30
OUTPUT_FORMATS = ("tau-bench", "mt-bench")
PLANNED_OUTPUT_FORMATS: tuple[str, ...] = ()
# A namespaced task id of a multi-domain run: "retail/12".
_TASK_REF = re.compile(r"^\s*([a-z_]+)\s*/\s*(\d+)\s*$")

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
        "workers",
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
    """One evaluation run. Defaults are τ-bench run.py's where it had one.

    `env` may name several domains (`"retail,airline"`): task ids are then namespaced
    (`"retail/12"`). `user_models` rotates user models over samples (see
    `user_model_for`). `max_turns` is accepted as another name of `max_steps`.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    env: str = "retail"
    agent_strategy: str = "tool-calling"
    model: str | None = None
    model_provider: str | None = None
    api_base: str | None = None
    temperature: float = 0.0
    top_p: float | None = Field(default=None, gt=0, le=1)
    user_strategy: str = "llm"
    user_model: str = "gpt-4o"
    user_models: list[str] | None = None
    user_model_provider: str | None = None
    user_api_base: str | None = None
    user_temperature: float | None = None
    user_top_p: float | None = Field(default=None, gt=0, le=1)
    user_affirmative: str | None = None
    task_split: str = "test"
    start_index: int = 0
    end_index: int = -1
    task_ids: list[int | str] | None = None
    tasks_file: str | None = None
    num_trials: int = Field(default=1, ge=1)
    max_concurrency: int = Field(default=1, ge=1)
    workers: int = Field(default=1, ge=1)
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

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        """`max_turns` is `max_steps`; `env` and `user_models` also take lists / CSV."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "max_turns" in data:
            turns = data.pop("max_turns")
            if turns is not None:
                steps = data.get("max_steps")
                if steps is not None and str(steps) != str(turns):
                    raise ValueError(
                        f"max_turns ({turns}) and max_steps ({steps}) are the same setting; "
                        "give one of them"
                    )
                data["max_steps"] = turns
        if isinstance(data.get("env"), list | tuple):
            data["env"] = ",".join(str(e) for e in data["env"])
        if isinstance(data.get("user_models"), str):
            data["user_models"] = _as_list(data["user_models"])
        return data

    @field_validator("env")
    @classmethod
    def _envs(cls, value: str) -> str:
        names = list(dict.fromkeys(e.strip() for e in value.split(",") if e.strip()))
        if not names:
            raise ValueError("no env given")
        return ",".join(names)

    @field_validator("user_models")
    @classmethod
    def _user_models(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        models = [str(m).strip() for m in value if str(m).strip()]
        return models or None

    @field_validator("task_ids", mode="before")
    @classmethod
    def _task_refs(cls, value: Any) -> Any:
        if value is None:
            return None
        out: list[int | str] = []
        for item in value if isinstance(value, list | tuple) else [value]:
            out.append(parse_task_id(item))
        return out

    @field_validator("output_format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        if value in PLANNED_OUTPUT_FORMATS:
            raise ValueError(f"output format {value!r} is not implemented yet")
        if value not in OUTPUT_FORMATS:
            raise ValueError(
                f"unknown output format {value!r} (available: {', '.join(OUTPUT_FORMATS)})"
            )
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
        if self.user_models:
            # With a rotation, `user_model` is its first model (file names, old readers);
            # each model's provider comes from its own prefix (see `user_options`).
            object.__setattr__(self, "user_model", self.user_models[0])
        elif self.user_model_provider is None and "/" in self.user_model:
            object.__setattr__(self, "user_model_provider", self.user_model.split("/", 1)[0])

    # -- views ------------------------------------------------------------------

    @property
    def envs(self) -> list[str]:
        """The domains of the run, in the order given."""
        return self.env.split(",")

    @property
    def multi_domain(self) -> bool:
        return len(self.envs) > 1

    def user_model_for(self, sample_index: int) -> str:
        """The user model of the sample at `sample_index` (round-robin over `user_models`)."""
        if not self.user_models:
            return self.user_model
        return self.user_models[sample_index % len(self.user_models)]

    def adapter_options(self) -> dict[str, Any]:
        """What the adapter builder receives: the config merged with `agent_options`."""
        options = self.model_dump(exclude={"agent_options"})
        options.update(self.agent_options)
        return options

    def user_options(self, model: str | None = None, seed: int | None = None) -> dict[str, Any]:
        """Keyword arguments for `tau_bench.users.build_user` for user model `model`
        (default `user_model`) and `seed` (default the run seed); unset ones are left
        out so the simulator's own defaults apply.

        A model with a provider prefix (`anthropic/...`) uses that provider; one without
        uses `user_model_provider`.
        """
        model = model or self.user_model
        provider = self.user_model_provider
        if self.user_models and "/" in model:
            provider = model.split("/", 1)[0]
        options = {
            "model": model,
            "provider": provider,
            "api_base": self.user_api_base,
            "temperature": self.user_temperature,
            "top_p": self.user_top_p,
            "seed": self.seed if seed is None else seed,
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


def parse_task_id(value: Any) -> int | str:
    """A task id as given: an integer, or `DOMAIN/N` (a task of one domain of a
    multi-domain run), normalised to `"domain/N"`."""
    if isinstance(value, bool):
        raise ValueError(f"task id must be an integer or DOMAIN/ID, got {value!r}")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    match = _TASK_REF.match(text)
    if not match:
        raise ValueError(f"task id must be an integer or DOMAIN/ID, got {value!r}")
    return f"{match[1]}/{int(match[2])}"


def episode_seed(seed: int, task_id: int | str, trial: int) -> int:
    """The seed of one episode, derived from the run seed, the task id and the trial.

    Stable across processes and Python versions (sha256, not `hash`), in [0, 2**31):
    the same run seed gives every (task, trial) the same seed, and different trials
    different seeds, so k trials at a fixed seed are still k different samples.
    """
    digest = hashlib.sha256(f"{seed}|{task_id}|{trial}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def is_secret_key(key: str) -> bool:
    lowered = key.lower()
    return any(hint in lowered for hint in _SECRET_HINTS)


def redact(options: dict[str, Any]) -> dict[str, Any]:
    """Replace values of secret-looking keys, at any depth, with a short hash
    (comparable across runs, not usable as the secret)."""

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: _hashed(v) if is_secret_key(str(k)) and v is not None else walk(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    result: dict[str, Any] = walk(options)
    return result


def _hashed(value: Any) -> str:
    digest = hashlib.sha256(str(value).encode("utf-8")).hexdigest()[:16]
    return f"<redacted sha256:{digest}>"


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
        elif (key == "task_ids" and value is not None) or (
            key == "user_models" and isinstance(value, str)
        ):
            out[key] = _as_list(value)
        else:
            out[key] = value
    if "max_turns" in out:
        # One name per layer, so a later layer's max_turns overrides an earlier max_steps.
        turns = out.pop("max_turns")
        if "max_steps" in out and turns is not None and str(out["max_steps"]) != str(turns):
            raise RunConfigError("max_turns and max_steps are the same setting; give one of them")
        if turns is not None:
            out["max_steps"] = turns
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
    return config_from_mapping(read_yaml_mapping(path))


def read_yaml_mapping(path: str | Path) -> dict[str, Any]:
    """A YAML file that must hold a mapping (or nothing), keys as written."""
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
    return data


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


# -- tau eval ---------------------------------------------------------------------------

# Keys of an eval file that are not RunConfig fields.
_EVAL_KEYS = frozenset({"name", "user_models", "num_samples", "ks", "output"})
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def safe_file_part(name: str) -> str:
    """`name` usable in a file name (`openai/gpt-4o` -> `openai_gpt-4o`)."""
    return _UNSAFE_NAME.sub("_", name).strip("._") or "model"


def default_ks(num_samples: int) -> list[int]:
    """1, 2, 4, ... up to `num_samples`, and `num_samples` itself."""
    ks, k = [], 1
    while k < num_samples:
        ks.append(k)
        k *= 2
    return [*ks, num_samples]


class EvalConfig(BaseModel):
    """`tau eval`: every user model x the selected tasks x `num_samples` samples.

    `run` holds the RunConfig settings shared by all user models (agent, sampling,
    task selection, max turns...); one run per user model is made from it with
    `run_config`. Its results go to `<log_dir>/<name>/`, the report to `output`
    (default `<log_dir>/<name>.eval.json`).
    """

    model_config = ConfigDict(extra="forbid")

    name: str = "eval"
    user_models: list[str] = Field(min_length=1)
    num_samples: int = Field(default=1, ge=1)
    ks: list[int] | None = None
    output: str | None = None
    run: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not value.strip() or safe_file_part(value) != value.strip():
            raise ValueError(
                f"eval name {value!r} must be a file-name part (letters, digits, . _ -)"
            )
        return value.strip()

    @model_validator(mode="after")
    def _check(self) -> EvalConfig:
        if len(set(self.user_models)) != len(self.user_models):
            raise ValueError("user_models lists a model twice")
        for k in self.ks or []:
            if not 1 <= k <= self.num_samples:
                raise ValueError(f"k={k} must be between 1 and num_samples ({self.num_samples})")
        for key in ("user_models", "num_trials", "run_name", "resume"):
            if self.run.get(key) is not None:
                raise ValueError(f"{key} is set by tau eval, not in the run settings")
        return self

    @property
    def k_values(self) -> list[int]:
        return sorted(set(self.ks)) if self.ks else default_ks(self.num_samples)

    @property
    def folder(self) -> Path:
        return Path(str(self.run.get("log_dir") or "results")) / self.name

    @property
    def output_path(self) -> Path:
        if self.output:
            return Path(self.output)
        return self.folder.parent / f"{self.name}.eval.json"

    def run_name(self, user_model: str) -> str:
        return f"{self.name}__{safe_file_part(user_model)}"

    def run_config(
        self, user_model: str, *, max_concurrency: int | None = None, resume: str | None = None
    ) -> RunConfig:
        """The run of one user model: `num_samples` trials of every selected task."""
        data = dict(self.run)
        data.update(
            user_model=user_model,
            num_trials=self.num_samples,
            run_name=self.run_name(user_model),
            log_dir=str(self.folder),
            resume=resume,
        )
        if max_concurrency is not None:
            data["max_concurrency"] = max_concurrency
        return build_config(data)


def eval_config_from_mapping(data: dict[str, Any]) -> EvalConfig:
    """An EvalConfig from a YAML/CLI mapping (dashes or underscores; `num_trials` is
    accepted for `num_samples`); the first problem as a one-line RunConfigError."""
    own: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = normalize_key(str(raw_key))
        if key == "num_trials":
            if "num_samples" in own and own["num_samples"] != value:
                raise RunConfigError("num_trials and num_samples are the same setting; give one")
            key = "num_samples"
        if key in _EVAL_KEYS:
            own[key] = _as_list(value) if key in ("user_models", "ks") else value
        else:
            rest[key] = value
    try:
        cfg = EvalConfig.model_validate({**own, "run": config_from_mapping(rest)})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "eval"
        msg = str(first["msg"]).removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            msg = "unknown setting"
        raise RunConfigError(f"{where}: {msg}") from None
    cfg.run_config(cfg.user_models[0])  # the shared run settings must be valid
    return cfg
