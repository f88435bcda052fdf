"""Run settings: `RunConfig` (`run_config`), how layers of settings combine (`layers`),
and `tau eval`'s settings (`eval_config`)."""

from tau_bench.config.eval_config import (
    EvalConfig,
    default_ks,
    eval_config_from_mapping,
    safe_file_part,
)
from tau_bench.config.layers import (
    absolute_paths,
    build_config,
    config_from_mapping,
    fingerprint_differences,
    load_yaml,
    normalize_key,
    parse_key_values,
    read_yaml_mapping,
)
from tau_bench.config.run_config import (
    DEFAULT_MAX_STEPS,
    OUTPUT_FORMATS,
    RunConfig,
    RunConfigError,
    backend_conflict,
    episode_seed,
)

__all__ = [
    "DEFAULT_MAX_STEPS",
    "OUTPUT_FORMATS",
    "EvalConfig",
    "RunConfig",
    "RunConfigError",
    "absolute_paths",
    "backend_conflict",
    "build_config",
    "config_from_mapping",
    "default_ks",
    "episode_seed",
    "eval_config_from_mapping",
    "fingerprint_differences",
    "load_yaml",
    "normalize_key",
    "parse_key_values",
    "read_yaml_mapping",
    "safe_file_part",
]
