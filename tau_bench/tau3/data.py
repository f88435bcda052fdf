"""Where τ³ data lives: `--data-dir`, then `TAU3_BENCH_DATA`, then the per-user cache.

The layout is that of `shared/datasets/tau2-bench` (`data/tau2/domains/<domain>/...`,
`<domain>/tools.json`, `data/tau2/user_simulator/*.md`), plus what `tau data pull
--suite tau3` writes next to it: `prompts/*.txt`, texts the upstream keeps inside its
Python source (the agent's system prompt, the NL judge's prompt). An offline copy without
`prompts/` runs everything that needs no prompt (scripted user, oracle agent,
`--judge-model assume-met`); the LLM agent and judge say to run `tau data pull`.
"""

from __future__ import annotations

import os
from pathlib import Path

from tau_bench.data.errors import DataDirError, probed
from tau_bench.data.files import read_text

__all__ = [
    "ENV_VAR",
    "PINNED_COMMIT",
    "PULL_HINT",
    "UPSTREAM_REPO",
    "cache_dir",
    "prompt_text",
    "resolve_tau3_data_dir",
]

ENV_VAR = "TAU3_BENCH_DATA"
UPSTREAM_REPO = "sierra-research/tau2-bench"
PINNED_COMMIT = "a2c024725189473d2d7cea3a5cfdbcc67478e41f"
MARKER = Path("data/tau2/domains")
PROMPTS_DIR = "prompts"
PULL_HINT = "restore it or run `tau data pull --suite tau3`"
"""What to do about a damaged τ³ data file (`tau_bench.data.files`' `hint`)."""


def cache_dir() -> Path:
    """The per-user cache `tau data pull --suite tau3` fills (one folder per commit)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("tau-adapters")) / "tau3-bench" / PINNED_COMMIT[:12]


def resolve_tau3_data_dir(explicit: str | Path | None = None) -> Path:
    """The τ³ data root in use; a one-line `DataDirError` saying what to do otherwise."""
    if explicit is not None:
        root, source = Path(explicit).expanduser(), "--data-dir"
    elif os.environ.get(ENV_VAR):
        root, source = Path(os.environ[ENV_VAR]).expanduser(), ENV_VAR
    else:
        root = cache_dir()
        if not (root / MARKER).is_dir():
            raise DataDirError(
                f"τ³ data not found in the cache {root}; run `tau data pull --suite tau3`, "
                f"or point {ENV_VAR} / --data-dir at a τ³ data directory"
            )
        return root
    if not probed((root / MARKER).is_dir, root, source):
        raise DataDirError(
            f"{source} points at {root}, which is not a τ³ data directory (no {MARKER})"
        )
    return root


def prompt_text(root: Path, name: str) -> str:
    """A prompt text extracted at pull time (`prompts/<name>.txt`)."""
    path = Path(root) / PROMPTS_DIR / f"{name}.txt"
    if not path.is_file():
        raise DataDirError(
            f"the τ³ prompt {name!r} is missing from {root} (the offline copy has none): "
            "run `tau data pull --suite tau3`"
        )
    return read_text(path, PULL_HINT)
