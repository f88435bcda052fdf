"""RunConfig: everything one `tau run` needs, from flags, a YAML file or code.

Field names follow τ-bench's run.py (`agent_strategy`, `task_split`, ...) so a YAML file
reads like the original command line. Adapter-specific settings (a Dialogflow agent id,
an HTTP config file, ...) live in `agent_options`: the core does not know them, it passes
them to the adapter builder, which declares and validates them (`tau_adapters.options`).
`fingerprint()` is the subset that changes results: a run may only be resumed under the
same fingerprint.
"""

from __future__ import annotations

import functools
import hashlib
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tau_adapters.conversation import DEFAULT_MAX_STEPS
from tau_adapters.redaction import fingerprint, redact_secrets, redact_string
from tau_bench.config.ray_address import check_ray_address
from tau_bench.task_ids import expand_task_ids
from tau_bench.user_values import MAX_TIMEOUT, check_endpoint_url

OUTPUT_FORMATS = ("tau-bench",)
MAX_TRIALS = 10_000  # a run's trials are kept in memory: far above any real use
MAX_WORKERS = 4_096  # Ray workers of one run: a large cluster's CPUs, not a typo's billion
MAX_CONCURRENCY = 1_000_000  # a run's episodes at most (`runner.plan.MAX_EPISODES`)
MAX_STEPS = 100_000  # agent actions of one episode: ~3,000 times the original's 30
MAX_SEED = 2**63 - 1  # seeds (and --shuffle) are 64-bit, as numpy's and the providers' are
MAX_FAILURES_IN_A_ROW = MAX_CONCURRENCY  # a breaker past a run's episodes never trips
MAX_PLATFORM_PRICE = 1_000.0  # USD per request: past any platform's; 1e308 made costs infinite
# A run name is a file-name stem inside --log-dir: no path, no leading dot.
RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")

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
        "backend",
        "ray_address",
        "llm_path",
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
        "platform_price_per_request",
        "skip_preflight",
        "max_consecutive_failures",
        "episode_timeout",
        "turn_timeout",
    }
)


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        return [v for v in value.replace(",", " ").split() if v]
    return [value]


class RunConfigError(ValueError):
    """A configuration the runner cannot use; the message says which value and why."""


class RunConfig(BaseModel):
    """One evaluation run. Defaults are τ-bench run.py's where it had one.

    `env` may name several domains (`"retail,airline"`): task ids are then namespaced
    (`"retail/12"`). `user_models` rotates user models over samples (see
    `user_model_for`).
    """

    # NaN and infinities are refused: `episode_timeout: .inf` would lift the deadline, and
    # a NaN never equals itself, so a run holding one could never be resumed.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    env: str = "retail"
    agent_strategy: str = "tool-calling"
    model: str | None = None
    model_provider: str | None = None
    api_base: str | None = None
    temperature: float = Field(default=0.0, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    user_strategy: str = "llm"
    user_model: str = "gpt-4o"
    user_models: list[str] | None = None
    user_model_provider: str | None = None
    user_api_base: str | None = None
    user_temperature: float | None = Field(default=None, ge=0)
    user_top_p: float | None = Field(default=None, gt=0, le=1)
    user_affirmative: str | None = None
    task_split: str = "test"
    judge_model: str | None = None
    start_index: int = 0
    end_index: int = -1
    task_ids: list[int | str] | None = None
    tasks_file: str | None = None
    num_trials: int = Field(default=1, ge=1, le=MAX_TRIALS)
    max_concurrency: int = Field(default=1, ge=1, le=MAX_CONCURRENCY)
    workers: int = Field(default=1, ge=1, le=MAX_WORKERS)
    # Where episodes run: this process ("local") or Ray workers (`workers` of them; on the
    # cluster at `ray_address`, else a local Ray). `workers` > 1 alone means a local Ray.
    backend: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    # Model calls: litellm, the direct OpenAI-compatible path, or "auto" (direct where exact).
    llm_path: Literal["auto", "litellm", "direct"] = "auto"
    seed: int = Field(default=10, ge=-MAX_SEED - 1, le=MAX_SEED)
    shuffle: int = Field(default=0, ge=-MAX_SEED - 1, le=MAX_SEED)
    log_dir: str = "results"
    few_shot_displays_path: str | None = None
    data_dir: str | None = None
    max_steps: int = Field(default=DEFAULT_MAX_STEPS, ge=1, le=MAX_STEPS)
    max_tool_calls_per_turn: int | None = Field(default=None, ge=1)
    resume: str | None = None
    provider_limits: dict[str, int] = Field(default_factory=dict)
    output_format: str = "tau-bench"
    agent_options: dict[str, Any] = Field(default_factory=dict)
    run_name: str | None = None
    quiet: bool = False
    # USD per agent request on a hosted platform (Dialogflow CX...); None: unknown.
    platform_price_per_request: float | None = Field(default=None, ge=0, le=MAX_PLATFORM_PRICE)
    # Failing fast (tau_bench.runner.preflight / breaker / deadlines; docs/running.md).
    skip_preflight: bool = False
    max_consecutive_failures: int = Field(default=5, ge=0, le=MAX_FAILURES_IN_A_ROW)  # 0: never
    episode_timeout: float = Field(default=1800.0, gt=0, le=MAX_TIMEOUT)
    turn_timeout: float = Field(default=600.0, gt=0, le=MAX_TIMEOUT)

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        """`env` and `user_models` also take lists / CSV."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
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
        # Results are grouped by user model, so a model listed twice would silently get a
        # double share of the samples; `tau eval` refuses the same.
        twice = next((m for i, m in enumerate(models) if m in models[:i]), None)
        if twice is not None:
            raise ValueError(f"{twice!r} is listed twice; list each model once")
        return models or None

    @field_validator("task_ids", mode="before")
    @classmethod
    def _task_refs(cls, value: Any) -> Any:
        if value is None:
            return None
        out: list[int | str] = []
        for item in value if isinstance(value, list | tuple) else [value]:
            out.extend(expand_task_ids(item))  # `0-4` ranges too (YAML, the API)
        if not out:
            # An empty shell variable must not turn a one-task run into the whole split.
            raise ValueError("selects no task (leave it out to run the whole split)")
        return out

    @field_validator("model", "model_provider", "user_model", "user_model_provider", "judge_model")
    @classmethod
    def _named(cls, value: str | None) -> str | None:
        # `--model "$MODEL"` with MODEL unset must not quietly become the default model.
        if value is not None and not value.strip():
            raise ValueError("the name is empty (an unset variable?): leave it out for the default")
        return value

    @field_validator("api_base", "user_api_base")
    @classmethod
    def _endpoint_url(cls, value: str | None) -> str | None:
        return check_endpoint_url(value)

    @field_validator("ray_address")
    @classmethod
    def _ray_address(cls, value: str | None) -> str | None:
        return check_ray_address(value)

    @field_validator("output_format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        if value not in OUTPUT_FORMATS:
            raise ValueError(
                f"unknown output format {value!r} (available: {', '.join(OUTPUT_FORMATS)}; "
                "MT-bench files: tau export --format mt-bench)"
            )
        return value

    @field_validator("run_name")
    @classmethod
    def _file_stem(cls, value: str | None) -> str | None:
        if value is not None and not RUN_NAME.match(value):
            raise ValueError(
                "letters, digits, '.', '-' and '_' only (at most 100, no leading dot): "
                "it names files inside --log-dir"
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
        if "task_split" not in self.model_fields_set and any("/" in e for e in self.envs):
            from tau_bench.suites import default_split_for

            split = default_split_for(self.envs)
            if split is not None:  # τ³: `base`
                object.__setattr__(self, "task_split", split)
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

    @property
    def on_ray(self) -> bool:
        """Episodes run on Ray workers: `backend="ray"`, `workers` > 1 or a `ray_address`."""
        return self.backend == "ray" or self.workers > 1 or self.ray_address is not None

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
        options = {k: v for k, v in options.items() if v is not None}
        if self.user_strategy not in ("scripted", "human"):
            from tau_bench.llm.gemini import resolve_gemini  # a bare `gemini-*` name

            options.update(resolve_gemini(model, provider, self.agent_options))
        return options

    def fingerprint(self) -> dict[str, Any]:
        """The fields that change results (secrets hashed): resume requires equality."""
        return _redacted(self.model_dump(exclude=set(_NOT_RESULT_FIELDS)))

    def public_dict(self) -> dict[str, Any]:
        """The whole config for result headers, with secret-looking options hashed."""
        return _redacted(self.model_dump())


def secret_option_names(strategy: str) -> frozenset[str]:
    """The agent options the strategy's adapter marks secret (`json_schema_extra=
    {"secret": True}` in its options model), whatever their names; none when the adapter
    cannot be loaded (building it fails the run with its own message)."""
    return _marked_options(strategy, "secret")


def path_option_names(strategy: str) -> frozenset[str]:
    """The agent options the strategy's adapter marks as a file's path (`json_schema_extra=
    {"path": True}`); none when the adapter cannot be loaded."""
    return _marked_options(strategy, "path")


@functools.lru_cache(maxsize=64)
def _marked_options(strategy: str, mark: str) -> frozenset[str]:
    from tau_adapters.options import options_model, path_fields, secret_fields
    from tau_adapters.registry import load_builder

    try:
        model = options_model(load_builder(strategy))
    except Exception:
        return frozenset()
    if model is None:
        return frozenset()
    return secret_fields(model) if mark == "secret" else path_fields(model)


def _redacted(data: dict[str, Any]) -> dict[str, Any]:
    """A dumped config with its secrets hashed: secret-looking agent options and those
    the adapter marks secret, and the credentials a model endpoint's URL may carry
    (`https://user:PASS@host/v1?api-key=...`)."""
    marked = secret_option_names(str(data.get("agent_strategy", "")))
    data["agent_options"] = {
        k: fingerprint(v) if k in marked and v is not None else v
        for k, v in data["agent_options"].items()
    }
    data["agent_options"] = redact_secrets(data["agent_options"])
    for name in ("api_base", "user_api_base"):
        if data.get(name) is not None:
            data[name] = redact_string(data[name])
    return data


def backend_conflict(backend: Any, workers: Any, ray_address: Any) -> str | None:
    """The problem when `backend` was chosen as "local" while `workers` > 1 or a Ray
    address asks for Ray (each alone means Ray: docs/scale.md); None when there is none.
    A choice the user made is refused, not silently overridden. The address is not
    echoed: it may carry a password."""
    if backend != "local":
        return None
    asks = []
    try:
        if int(workers or 1) > 1:
            asks.append(f"workers {int(workers)}")
    except (TypeError, ValueError):
        pass  # reported by the config's own check
    if str(ray_address or "").strip():
        asks.append("a Ray address")
    if not asks:
        return None
    return (
        f"backend local runs episodes in this process, but {' and '.join(asks)} asks for "
        "Ray: choose backend ray, or leave those out"
    )


def episode_seed(seed: int, task_id: int | str, trial: int) -> int:
    """The seed of one episode, derived from the run seed, the task id and the trial.

    Stable across processes and Python versions (sha256, not `hash`), in [0, 2**31):
    the same run seed gives every (task, trial) the same seed, and different trials
    different seeds, so k trials at a fixed seed are still k different samples.
    """
    digest = hashlib.sha256(f"{seed}|{task_id}|{trial}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
