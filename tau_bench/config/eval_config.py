"""`tau eval` settings: every user model x the selected tasks x `num_samples` samples."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tau_bench.config.layers import build_config, config_from_mapping, normalize_key
from tau_bench.config.run_config import MAX_TRIALS, RunConfig, RunConfigError, _as_list

# Keys of an eval file that are not RunConfig fields.
MAX_USER_MODELS = 100  # runs of one eval, all at once: far above any real comparison
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
    # Each user model is a run, and they all go on at once.
    user_models: list[str] = Field(min_length=1, max_length=MAX_USER_MODELS)
    num_samples: int = Field(default=1, ge=1, le=MAX_TRIALS)
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
        files: dict[str, str] = {}
        for model in self.user_models:
            other = files.setdefault(safe_file_part(model), model)
            if other != model:
                raise ValueError(
                    f"user models {other!r} and {model!r} would write the same files "
                    f"({self.name}__{safe_file_part(model)}.*): name one of them differently"
                )
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
