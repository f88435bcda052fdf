"""What a client sees of a run: the stored row made safe to return.

Secrets never leave the server: agent options whose names look secret (key, token,
password...) are replaced by a short hash at any depth (a header map inside the options
included), and any secret value that found its way into an error message is masked.
Server paths (log dir, data dir) are left out: clients use the run's links instead. A run
of an operator's registered agent config shows the config's name, never its options (nor
the API bases or files it may name).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tau_adapters.redaction import mask_values, redact_secrets, secret_values
from tau_bench.service.store import RunRow

MASK = "***"  # the mask of the runner's own files: a secret reads the same everywhere
_SERVER_ONLY = ("log_dir", "data_dir", "resume", "quiet")
_SUMMARY_DROP = ("config", "files")
# Where a stored config names its registered agent config (`manager.AGENT_CONFIG_KEY`).
_AGENT_CONFIG = "agent_config"
# What only an operator's config may set: hidden in runs of a registered agent config.
_OPERATOR_ONLY = (
    "agent_options",
    "api_base",
    "user_api_base",
    "tasks_file",
    "few_shot_displays_path",
)


def scrub(value: Any, secrets: Iterable[str]) -> Any:
    """`value` with every occurrence of a secret shown as the service's mask, at any depth."""
    return mask_values(value, secrets, mask=MASK)


def public_config(config: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in config.items() if k not in _SERVER_ONLY}
    if out.get(_AGENT_CONFIG) is not None:  # the operator's: its name, not its settings
        return {k: v for k, v in out.items() if k not in _OPERATOR_ONLY}
    out["agent_options"] = redact_secrets(config.get("agent_options") or {})
    return out


def links(run_id: str) -> dict[str, str]:
    base = f"/runs/{run_id}"
    return {
        "self": base,
        "scores": f"{base}/scores",
        "trajectories": f"{base}/trajectories/{{task}}",
        "report": f"{base}/report",
    }


def run_view(
    row: RunRow,
    *,
    progress: dict[str, Any] | None = None,
    summary: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON of `GET /runs/{id}`; `progress`/`summary` are live values of a running run."""
    final = row.summary if summary is None else summary
    view = {
        "run_id": row.id,
        "status": row.status,
        "origin": row.origin,
        "run_name": row.run_name,
        "created": row.created,
        "started": row.started,
        "finished": row.finished,
        "attempts": row.attempts,
        "progress": progress if progress is not None else row.progress,
        "summary": None
        if final is None
        else {k: v for k, v in final.items() if k not in _SUMMARY_DROP},
        "error": row.error,
        "note": row.note,
        "config": public_config(row.config),
        "links": links(row.id),
    }
    return scrub(view, secret_values(row.config))  # type: ignore[no-any-return]
