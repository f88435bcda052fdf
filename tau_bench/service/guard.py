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

import asyncio
from collections.abc import Mapping
from typing import Any

from fastapi import Request

from tau_bench.config import RunConfig, normalize_key
from tau_bench.service.settings import SERVER_FIELDS, ServiceLimits
from tau_bench.service.submission import SubmissionError
from tau_bench.task_ids import expand_task_ids

__all__ = [
    "AGENT_CONFIG",
    "CLIENT_FIELDS",
    "CLIENT_FORBIDDEN",
    "ClientGone",
    "ServiceLimits",
    "client_settings",
    "read_body",
]

_OPERATOR_ONLY = (
    "agent options are set by the server's operator: name one of its agent configs "
    "with agent_config (GET /agent-configs lists them)"
)
# Settings only the operator may give (in a registered agent config), never a request.
CLIENT_FORBIDDEN: dict[str, str] = {
    "agent_options": _OPERATOR_ONLY,
    "agent_option": _OPERATOR_ONLY,  # `config_from_mapping` takes the CLI's singular too
    "tasks_file": "would read a file on the server",
    "few_shot_displays_path": "would read a file on the server",
    "api_base": "would send the server's API keys to a URL of the request's choice",
    "user_api_base": "would send the server's API keys to a URL of the request's choice",
    "ray_address": "set by the server",
    "backend": "set by the server",
    "workers": "set by the server",
}
AGENT_CONFIG = "agent_config"
# Everything a request may set: RunConfig fields that neither read the server's files nor
# spend its secrets elsewhere, and the CLI's singular `provider_limit`. An allow-list:
# any other key - an adapter option at the top level (`http_config`, `agent_url`,
# `credentials_file`...), which `config_from_mapping` would pass to the adapter - is
# refused, so options only ever come from the operator's registered configs.
CLIENT_FIELDS = frozenset(set(RunConfig.model_fields) - set(CLIENT_FORBIDDEN) - SERVER_FIELDS) | {
    "provider_limit",
    AGENT_CONFIG,
}
# Integer settings: a JSON integer, nothing else (pydantic would take `1000.0` or "1000"
# as 1000, past the bounds below).
_INT_FIELDS = frozenset(
    name
    for name, info in RunConfig.model_fields.items()
    if info.annotation in (int, int | None) and name in CLIENT_FIELDS
)
_NOT_CLIENT = (
    "unknown setting: a request gives run settings only; agent options are set by the "
    "server's operator (name one of its agent configs with agent_config; GET "
    "/agent-configs lists them)"
)


def count_task_ids(value: Any, limit: int) -> int:
    """How many ids `value` selects, as the run's own parser (`expand_task_ids`) reads
    them, one space- or comma-separated part at a time; counting stops past `limit`, so
    at most `limit` + one range (`task_ids.MAX_RANGE`) ids are ever expanded."""
    items = value if isinstance(value, list | tuple) else [value]
    total = 0
    for item in items:
        parts = item.replace(",", " ").split() if isinstance(item, str) else [item]
        try:
            if not parts:
                expand_task_ids(item)  # the parser's own message for an empty id
            for part in parts:
                total += len(expand_task_ids(part))
                if total > limit:
                    return total
        except ValueError as exc:
            raise SubmissionError("task_ids", str(exc)) from None
    return total


def check_types(data: Mapping[str, Any]) -> None:
    """Integer settings are JSON integers; no number anywhere is NaN or infinite."""
    for key in sorted(_INT_FIELDS & set(data)):
        value = data[key]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise SubmissionError(key, f"must be an integer, got {_short(value)}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_bounds(data: Mapping[str, Any], limits: ServiceLimits) -> None:
    """Refuse requests for more than `limits` allow, before anything is expanded. The
    tasks a split or an index range selects are counted once the data is read
    (`submission.check_runnable`)."""
    check_types(data)
    trials = data.get("num_trials")
    if trials is not None and trials > limits.max_trials:
        raise SubmissionError("num_trials", f"at most {limits.max_trials} on this server")
    concurrency = data.get("max_concurrency")
    if concurrency is not None and concurrency > limits.max_concurrency:
        raise SubmissionError("max_concurrency", f"at most {limits.max_concurrency} on this server")
    for key in ("episode_timeout", "turn_timeout"):
        value = data.get(key)
        if isinstance(value, int | float) and value > limits.max_timeout:
            raise SubmissionError(key, f"at most {limits.max_timeout:g} seconds on this server")
    steps = data.get("max_steps")
    if steps is not None and steps > limits.max_steps:
        raise SubmissionError("max_steps", f"at most {limits.max_steps} on this server")
    if data.get("task_ids") is not None:
        count = count_task_ids(data["task_ids"], limits.max_task_ids)
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
) -> tuple[dict[str, Any], str | None]:
    """A request's run settings made safe, and the agent config it names: only
    `CLIENT_FIELDS` accepted, the named agent config (the operator's) merged under the
    request, bounds checked."""
    normalized = {normalize_key(str(k)): v for k, v in data.items()}
    for key in normalized:
        if key in CLIENT_FORBIDDEN:
            raise SubmissionError(key, CLIENT_FORBIDDEN[key])
        if key in SERVER_FIELDS:
            raise SubmissionError(key, "set by the server, not by a request")
        if key not in CLIENT_FIELDS:
            raise SubmissionError(key, _NOT_CLIENT)
    check_types(normalized)
    out = dict(normalized)
    name = out.pop(AGENT_CONFIG, None)
    if name is not None:
        if not isinstance(name, str) or name not in agent_configs:
            known = ", ".join(sorted(agent_configs)) or "none registered"
            raise SubmissionError(AGENT_CONFIG, f"unknown agent config {_short(name)} ({known})")
        registered = dict(agent_configs[name])
        strategy = out.get("agent_strategy")
        if strategy is not None and strategy != registered.get("agent_strategy"):
            raise SubmissionError("agent_strategy", f"set by agent config {name!r}")
        out = {**registered, **out}
    check_bounds(out, limits)
    return out, name


class ClientGone(Exception):
    """The client disconnected before its request arrived whole: nobody reads an answer."""


async def read_body(request: Request, limit: int, timeout: float) -> bytes:
    """The request body, refused with 413 beyond `limit` bytes (never read past it) and
    with 408 when it has not arrived within `timeout` seconds of its headers (the
    connection is then closed: the rest may still be on its way). `ClientGone` when the
    client hangs up mid-body."""
    from starlette.requests import ClientDisconnect

    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise SubmissionError("body", f"larger than {limit} bytes", status=413)
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise SubmissionError("body", f"larger than {limit} bytes", status=413)
                chunks.append(chunk)
    except TimeoutError:
        raise SubmissionError(
            "body", f"not received within {timeout:g} seconds", status=408, close=True
        ) from None
    except ClientDisconnect:
        raise ClientGone() from None
    return b"".join(chunks)
