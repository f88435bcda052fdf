"""What a client sees of a run: the stored row made safe to return.

Secrets never leave the server: agent options whose names look secret (key, token,
password...) are replaced by a short hash at any depth (a header map inside the options
included), and any secret value that found its way into an error message is masked.
Server paths (log dir, data dir) are left out: clients use the run's links instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tau_bench.config import is_secret_key, redact
from tau_bench.service.store import RunRow

MASK = "<redacted>"
_SERVER_ONLY = ("log_dir", "data_dir", "resume", "quiet")
_SUMMARY_DROP = ("config", "files")
_MIN_SECRET = 4  # shorter values would mask ordinary words


def deep_redact(value: Any) -> Any:
    """`tau_bench.config.redact` applied to every mapping inside `value`."""
    if isinstance(value, dict):
        shallow = redact({str(k): v for k, v in value.items()})
        return {
            k: (v if is_secret_key(k) and v is not None else deep_redact(v))
            for k, v in shallow.items()
        }
    if isinstance(value, list):
        return [deep_redact(v) for v in value]
    return value


def secret_values(value: Any, under_secret: bool = False) -> set[str]:
    """Every string stored under a secret-looking key, at any depth."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            found |= secret_values(item, under_secret or is_secret_key(str(key)))
    elif isinstance(value, list):
        for item in value:
            found |= secret_values(item, under_secret)
    elif under_secret and value is not None and len(str(value)) >= _MIN_SECRET:
        found.add(str(value))
    return found


def scrub(value: Any, secrets: Iterable[str]) -> Any:
    """`value` with every occurrence of a secret masked, in every string at any depth."""
    ordered = sorted(set(secrets), key=len, reverse=True)
    if not ordered:
        return value

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            for secret in ordered:
                item = item.replace(secret, MASK)
            return item
        if isinstance(item, dict):
            return {k: walk(v) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v) for v in item]
        return item

    return walk(value)


def public_config(config: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in config.items() if k not in _SERVER_ONLY}
    out["agent_options"] = deep_redact(config.get("agent_options") or {})
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
