"""The run manifest: everything that decides what a run's numbers mean, in one record.

Written into the log's header and the summary (`manifest`), read by `tau compare` /
`tau report` to refuse comparisons of unlike runs (`tau_bench.analysis.confounds`):

* `suite`: the suite and, per domain, its data version (upstream commit and sha256 of
  the tasks / DB / policy files, from the data directory's MANIFEST.json);
* `tasks`: source, split, the exact task ids, the hash of the selection and a sha256 per
  task definition (`task_digest`), so a changed task is seen whatever its id;
* `agent`: strategy, display name (the HTTP config's `name:`), model and parameters, a
  hash of its configuration with secrets removed;
* `user`: strategy, model(s), parameters; `judge`: the judge model (τ³), if any;
* `seed`, `max_steps`, and the versions of this package and of the dependencies that
  change behaviour (litellm, the Google clients).
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
from collections.abc import Mapping
from importlib import metadata
from typing import Any

from tau_adapters.redaction import redact_secrets

# A prepared run (`tau_bench.runner.plan.RunPlan`); not imported: the runner imports us.
RunPlan = Any

MANIFEST_VERSION = 1
PACKAGES = (
    "tau-adapters",
    "litellm",
    "openai",
    "httpx",
    "pydantic",
    "google-cloud-dialogflow-cx",
    "google-cloud-ces",
    "a2a-sdk",
)
NO_MODEL_USERS = frozenset({"scripted", "human"})


def _sha256(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    # surrogatepass: a lone surrogate (from a hostile or damaged file) hashes instead of
    # raising; valid text encodes to the same bytes as plain UTF-8.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def task_digest(task: Mapping[str, Any]) -> str:
    """sha256 of a task definition as recorded (keys sorted, null fields dropped), so a
    task read back from our log and from an original τ-bench file hash alike."""
    return _sha256({k: v for k, v in task.items() if v is not None})


def package_versions() -> dict[str, str]:
    """Installed versions of the packages that change results (absent ones left out)."""
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def display_name(provider: Any) -> str | None:
    """The agent's display name, if its provider declares one (`display_name`)."""
    name = getattr(provider, "display_name", None)
    return name.strip() or None if isinstance(name, str) else None


def _agent(plan: RunPlan, provider: Any) -> dict[str, Any]:
    cfg = plan.config
    params = {
        "strategy": cfg.agent_strategy,
        "model": cfg.model,
        "provider": cfg.model_provider,
        "temperature": cfg.temperature,
        "top_p": cfg.top_p,
        "max_tool_calls_per_turn": cfg.max_tool_calls_per_turn,
        "few_shot_displays_path": cfg.few_shot_displays_path,
        "options": redact_secrets(cfg.agent_options),
    }
    digest = getattr(provider, "config_digest", None)
    return {
        "strategy": cfg.agent_strategy,
        "name": display_name(provider),
        "model": cfg.model,
        "temperature": cfg.temperature,
        "top_p": cfg.top_p,
        "config_hash": _sha256({**params, "adapter_config": digest}),
    }


def _user(plan: RunPlan) -> dict[str, Any]:
    cfg = plan.config
    has_model = cfg.user_strategy not in NO_MODEL_USERS
    return {
        "strategy": cfg.user_strategy,
        "model": cfg.user_model if has_model and not cfg.user_models else None,
        "models": list(cfg.user_models) if has_model and cfg.user_models else None,
        "temperature": cfg.user_temperature,
        "top_p": cfg.user_top_p,
    }


def build_manifest(plan: RunPlan, provider: Any = None) -> dict[str, Any]:
    """The manifest of a prepared run (`provider`: the built agent provider, for its
    display name and configuration digest)."""
    cfg = plan.config
    suite = {d.suite for d in plan.domains.values() if getattr(d, "suite", None)}
    return {
        "version": MANIFEST_VERSION,
        "suite": {
            "name": ",".join(sorted(suite)) or None,
            "domains": {name: _data_version(d) for name, d in plan.domains.items()},
        },
        "tasks": {
            "source": plan.source,
            "split": None if cfg.tasks_file else cfg.task_split,
            "tasks_file": cfg.tasks_file,
            "ids": [str(t) for t in plan.tasks],
            "selection_hash": plan.task_hash,
            "digests": {
                str(tid): task_digest(task.model_dump(mode="json"))
                for tid, task in plan.tasks.items()
            },
        },
        "agent": _agent(plan, provider),
        "user": _user(plan),
        "judge": {"model": getattr(cfg, "judge_model", None)},
        "seed": cfg.seed,
        "max_steps": cfg.max_steps,
        "num_trials": cfg.num_trials,
        "platform_price_per_request": getattr(cfg, "platform_price_per_request", None),
        "versions": package_versions(),
    }


def _data_version(domain: Any) -> dict[str, Any]:
    try:
        version = domain.data_version()
    except Exception as exc:  # a suite without versioned data: say so, do not fail the run
        return {"error": f"{type(exc).__name__}: {exc}"}
    files = version.get("files") or {}
    return {
        "repo": version.get("repo"),
        "commit": version.get("commit"),
        "files": files,
        "hash": _sha256(files) if files else None,
    }


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def name_part(name: str) -> str:
    """A display name as a file-name part: `Support Bot/v2` -> `Support-Bot-v2`."""
    return _UNSAFE.sub("-", name).strip("-._")[:60]


def apply_display_name(plan: RunPlan, name: str | None) -> None:
    """Put the agent's display name into a new run's default name:
    `http-<name>-default-0.0_range_...` (a resumed or explicitly named run keeps its)."""
    part = name_part(name or "")
    prefix = f"{plan.config.agent_strategy}-"
    if not part or plan.resumed or plan.config.run_name or not plan.run_name.startswith(prefix):
        return
    log_dir = plan.log_path.parent
    base = stem = f"{prefix}{part}-{plan.run_name[len(prefix) :]}"
    n = 1
    while (log_dir / f"{stem}.jsonl").exists() or (log_dir / f"{stem}.json").exists():
        n += 1
        stem = f"{base}_{n}"
    plan.run_name = stem
    plan.log_path = plan.log_path.with_name(f"{stem}.jsonl")
