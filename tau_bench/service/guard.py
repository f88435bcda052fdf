"""What a client of `tau serve` may ask for: no server files, no server secrets, bounded work.

Why: a run config is code-like. An inline `http_config` fills `${VAR}` from the
environment of whoever loads it and sends the result to the URL it names; `tasks_file`
and `few_shot_displays_path` read files; `api_base` makes the server's model API key go
to a URL of the client's choice. On a server all of these would read the operator's
environment and disk for the client. So a request never carries them: agents configured
with options are ones the operator registered (`ServiceSettings.agent_configs`, named by
`agent_config` in the request), and every resource a client can request is bounded
(`ServiceLimits`): body size, trials, tasks, episodes, concurrency.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from fastapi import Request

from tau_bench.config import normalize_key
from tau_bench.service.settings import ServiceLimits
from tau_bench.service.submission import SubmissionError

__all__ = ["AGENT_CONFIG", "CLIENT_FORBIDDEN", "ServiceLimits", "client_settings", "read_body"]

# Settings only the operator may give (in a registered agent config), never a request.
CLIENT_FORBIDDEN: dict[str, str] = {
    "agent_options": (
        "agent options are set by the server's operator: name one of its agent configs "
        "with agent_config (GET /agent-configs lists them)"
    ),
    "tasks_file": "would read a file on the server",
    "few_shot_displays_path": "would read a file on the server",
    "api_base": "would send the server's API keys to a URL of the request's choice",
    "user_api_base": "would send the server's API keys to a URL of the request's choice",
    "ray_address": "set by the server",
    "backend": "set by the server",
    "workers": "set by the server",
}
AGENT_CONFIG = "agent_config"
_RANGE = re.compile(r"^(?:[A-Za-z0-9_.-]+/)?(\d+)-(\d+)$")


def _int(data: Mapping[str, Any], key: str) -> int | None:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    try:
        return int(value)
    except ValueError:
        return None  # the config's own validation names it


def count_task_ids(value: Any) -> int:
    """How many ids `value` selects, ranges counted without expanding them."""
    items = value if isinstance(value, list | tuple) else [value]
    total = 0
    for item in items:
        for part in str(item).replace(",", " ").split() if isinstance(item, str) else [item]:
            match = _RANGE.match(str(part))
            total += int(match[2]) - int(match[1]) + 1 if match else 1
    return total


def check_bounds(data: Mapping[str, Any], limits: ServiceLimits) -> None:
    """Refuse requests for more than `limits` allow, before anything is expanded."""
    trials = _int(data, "num_trials")
    if trials is not None and trials > limits.max_trials:
        raise SubmissionError("num_trials", f"at most {limits.max_trials} on this server")
    concurrency = _int(data, "max_concurrency")
    if concurrency is not None and concurrency > limits.max_concurrency:
        raise SubmissionError("max_concurrency", f"at most {limits.max_concurrency} on this server")
    if data.get("task_ids") is not None:
        count = count_task_ids(data["task_ids"])
        if count > limits.max_task_ids:
            raise SubmissionError("task_ids", f"at most {limits.max_task_ids} task ids")
        if count * max(1, trials or 1) > limits.max_episodes:
            raise SubmissionError(
                "num_trials", f"tasks × trials is at most {limits.max_episodes} on this server"
            )


def client_settings(
    data: Mapping[str, Any],
    agent_configs: Mapping[str, Mapping[str, Any]],
    limits: ServiceLimits,
) -> dict[str, Any]:
    """A request's run settings made safe: forbidden keys refused, a named agent config
    (the operator's) merged under the request, bounds checked."""
    normalized = {normalize_key(str(k)): v for k, v in data.items()}
    for key, why in CLIENT_FORBIDDEN.items():
        if key in normalized:
            raise SubmissionError(key, why)
    out = dict(normalized)
    name = out.pop(AGENT_CONFIG, None)
    if name is not None:
        if not isinstance(name, str) or name not in agent_configs:
            known = ", ".join(sorted(agent_configs)) or "none registered"
            raise SubmissionError(AGENT_CONFIG, f"unknown agent config {name!r} ({known})")
        registered = dict(agent_configs[name])
        strategy = out.get("agent_strategy")
        if strategy is not None and strategy != registered.get("agent_strategy"):
            raise SubmissionError("agent_strategy", f"set by agent config {name!r}")
        out = {**registered, **out}
    check_bounds(out, limits)
    return out


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 beyond `limit` bytes (never read past it)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise SubmissionError("body", f"larger than {limit} bytes", status=413)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise SubmissionError("body", f"larger than {limit} bytes", status=413)
        chunks.append(chunk)
    return b"".join(chunks)
