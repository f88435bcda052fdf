"""Adapter options: read, validate and normalise them once, before any network call.

The runner hands `build(options)` a flat dict (keys with underscores, as the CLI flags
`--agent-id`, `--session-param`...); adapter-specific keys may also sit in a nested
`options["agent_options"]`, which wins. Everything that can be checked offline is checked
here so a typo fails the run at once with one clear line, not after the first episode.
"""

from __future__ import annotations

import math
import os
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tau_adapters.jsonsafe import printable
from tau_adapters.options import MAX_ATTEMPTS, MAX_SECONDS, check_key_templates
from tau_adapters.protocol import AdapterConfigError, SessionContext

EMULATOR_ENV = "DIALOGFLOW_CX_EMULATOR_HOST"
GLOBAL_ENDPOINT = "dialogflow.googleapis.com"
TEMPLATE_FIELDS = frozenset({"task_id", "user_id", "trial", "session_id", "env", "task_split"})
MAX_SESSION_ID = 36
MAX_SESSION_TTL = 86400
DEFAULT_MAX_RESPONSE_MB = 32  # a DetectIntent answer or a ListTools page is far smaller
MAX_RESPONSE_MB = 1024

_AGENT_NAME = re.compile(r"^projects/([^/]+)/locations/([^/]+)/agents/([^/]+)$")
_ID = re.compile(r"^[A-Za-z0-9_.:-]+$")
_SESSION_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_VIEWS = {"default": "", "basic": "BASIC", "full": "FULL"}


@dataclass(frozen=True)
class DialogflowConfig:
    """Where the agent lives, how to reach it, and how hard to try."""

    project_id: str
    location: str
    agent_id: str
    environment: str | None = None
    language_code: str = "en"
    credentials_file: str | None = None
    api_endpoint: str = GLOBAL_ENDPOINT
    emulator: str | None = None
    session_params: tuple[tuple[str, str], ...] = ()
    session_ttl: int | None = None
    timeout: float = 60.0
    call_deadline: float = 300.0
    max_attempts: int = 10
    retry_initial: float = 1.0
    retry_max: float = 32.0
    ambiguous_retries: int = 1
    rate_limit: float | None = None
    response_view: str = ""
    quota_project_id: str | None = None
    task_params: bool = False
    default_split: str = "test"
    text_limit: int = 256
    long_text: str = "fail"
    trace: str = "compact"
    max_response_mb: int = DEFAULT_MAX_RESPONSE_MB
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def max_response_bytes(self) -> int:
        return self.max_response_mb << 20

    @property
    def agent_name(self) -> str:
        return f"projects/{self.project_id}/locations/{self.location}/agents/{self.agent_id}"

    def session_path(self, session_id: str) -> str:
        """`…/agents/A/sessions/S` (draft) or `…/agents/A/environments/E/sessions/S`."""
        base = self.agent_name
        if self.environment:
            base = f"{base}/environments/{self.environment}"
        return f"{base}/sessions/{session_id}"

    def render_params(self, session: SessionContext) -> dict[str, Any]:
        """Session parameters for the first turn: `--session-param` templates, plus the
        benchmark context (`env`, `task_id`, `task_split`, `user_id`, `trial`) when
        `task_params` is on (always with the emulator, which looks the task up)."""
        values = template_values(session, self.default_split)
        params: dict[str, Any] = {}
        if self.task_params:
            params.update(
                {
                    "env": session.domain,
                    "task_split": values["task_split"],
                    "trial": session.trial,
                }
            )
            if session.task_id is not None:
                params["task_id"] = session.task_id
            if session.user_id:
                params["user_id"] = session.user_id
        for key, template in self.session_params:
            params[key] = string.Formatter().vformat(template, (), values)
        return params


def template_values(session: SessionContext, default_split: str = "test") -> dict[str, Any]:
    split = session.metadata.get("task_split") or session.metadata.get("split") or default_split
    return {
        "task_id": "" if session.task_id is None else session.task_id,
        "user_id": session.user_id or "",
        "trial": session.trial,
        "session_id": session.session_id,
        "env": session.domain,
        "task_split": split,
    }


def _merged(options: Mapping[str, Any]) -> dict[str, Any]:
    merged = {k: v for k, v in options.items() if k != "agent_options"}
    nested = options.get("agent_options")
    if isinstance(nested, Mapping):
        merged.update({str(k).replace("-", "_"): v for k, v in nested.items()})
    return merged


def _text(opts: Mapping[str, Any], key: str) -> str | None:
    value = opts.get(key)
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _number(
    opts: Mapping[str, Any],
    key: str,
    default: float,
    *,
    minimum: float = 0.0,
    maximum: float | None = None,
) -> float:
    value = opts.get(key)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise AdapterConfigError(f"dialogflow: {key} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise AdapterConfigError(f"dialogflow: {key} must be a finite number, got {value!r}")
    if number < minimum:
        raise AdapterConfigError(f"dialogflow: {key} must be >= {minimum:g}, got {value!r}")
    if maximum is not None and number > maximum:
        raise AdapterConfigError(f"dialogflow: {key} must be <= {maximum:g}, got {value!r}")
    return number


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "on"}
    return bool(value)


def parse_session_params(raw: Any) -> tuple[tuple[str, str], ...]:
    """`["KEY=TEMPLATE", ...]` (or a mapping) checked against the known placeholders."""
    if raw is None or raw == "":
        return ()
    if isinstance(raw, Mapping):
        items = [(str(k), str(v)) for k, v in raw.items()]
    else:
        entries = [raw] if isinstance(raw, str) else list(raw)
        items = []
        for entry in entries:
            key, sep, template = str(entry).partition("=")
            if not sep or not key.strip():
                raise AdapterConfigError(
                    f"dialogflow: --session-param expects KEY=TEMPLATE, got {entry!r}"
                )
            items.append((key.strip(), template))
    for key, template in items:
        try:
            check_key_templates([f"{key}={template}"])
        except ValueError as exc:
            raise AdapterConfigError(
                f"dialogflow: session param {printable(key)}: {printable(str(exc))}"
            ) from None
    return tuple(items)


def _agent(opts: Mapping[str, Any]) -> tuple[str, str, str]:
    agent = _text(opts, "agent_id")
    project = _text(opts, "project_id")
    location = _text(opts, "location")
    if not agent:
        raise AdapterConfigError(
            "dialogflow: missing agent id: pass --agent-id (the agent's id or its full name "
            "projects/P/locations/L/agents/A)"
        )
    match = _AGENT_NAME.match(agent)
    if match:
        p, loc, a = match.groups()
        if project and project != p:
            raise AdapterConfigError(
                f"dialogflow: --project-id {project!r} does not match the agent name's project {p!r}"
            )
        if location and location != loc:
            raise AdapterConfigError(
                f"dialogflow: --location {location!r} does not match the agent name's location {loc!r}"
            )
        for label, part in (("project id", p), ("location", loc), ("agent id", a)):
            if not _ID.match(part):
                raise AdapterConfigError(f"dialogflow: bad {label} {part!r} in agent name")
        return p, loc, a
    if "/" in agent or not _ID.match(agent):
        raise AdapterConfigError(
            f"dialogflow: bad agent id {agent!r}: expected an id or projects/P/locations/L/agents/A"
        )
    if not project:
        raise AdapterConfigError(
            "dialogflow: missing project id: pass --project-id (or a full agent name as --agent-id)"
        )
    return project, location or "global", agent


_HOST = re.compile(r"^(?:[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.%A-Za-z]+\])$")


def parse_address(text: str, *, what: str = "--emulator", allow_zero: bool = False) -> str:
    """`host:port` checked: a host name, IPv4 address or bracketed IPv6 address, and a
    port 1-65535 (0 too with `allow_zero`: any free port, for a server). An out-of-range
    port is refused, never wrapped round (gRPC would take 99999 as 34463)."""
    host, sep, port = text.strip().rpartition(":")
    low = 0 if allow_zero else 1
    if not sep or not host or not _HOST.match(host):
        raise AdapterConfigError(f"dialogflow: {what} must be host:port, got {text!r}")
    if not (port.isascii() and port.isdigit()) or not low <= int(port) <= 65535:
        raise AdapterConfigError(
            f"dialogflow: {what} port must be {low}-65535, got {port!r} in {text!r}"
        )
    return f"{host}:{int(port)}"


def endpoint_for(location: str) -> str:
    """`global` agents live at the global endpoint; any other region at its own."""
    if location == "global":
        return GLOBAL_ENDPOINT
    return f"{location}-{GLOBAL_ENDPOINT}"


def load_config(options: Mapping[str, Any]) -> DialogflowConfig:
    """Validate the adapter's options (AdapterConfigError on the first problem)."""
    opts = _merged(options)
    project, location, agent = _agent(opts)
    for label, value in (("project id", project), ("location", location)):
        if not _ID.match(value):
            raise AdapterConfigError(f"dialogflow: bad {label} {value!r}")

    environment = _text(opts, "environment")
    if environment:
        if environment.startswith("projects/"):
            prefix = f"projects/{project}/locations/{location}/agents/{agent}/environments/"
            if not environment.startswith(prefix):
                raise AdapterConfigError(
                    f"dialogflow: environment {environment!r} is not an environment of {agent!r}"
                )
            environment = environment[len(prefix) :]
        if environment.lower() == "draft":
            environment = None
        elif not _ID.match(environment):
            raise AdapterConfigError(f"dialogflow: bad environment id {environment!r}")

    creds = _text(opts, "gcp_sa_file")
    if creds and not Path(creds).expanduser().is_file():
        raise AdapterConfigError(f"dialogflow: credentials file not found: {creds}")

    emulator = _text(opts, "emulator")
    if emulator:
        emulator = parse_address(emulator)
    elif _text(os.environ, EMULATOR_ENV):
        emulator = parse_address(str(_text(os.environ, EMULATOR_ENV)), what=EMULATOR_ENV)
    max_response_mb = int(_number(opts, "max_response_mb", DEFAULT_MAX_RESPONSE_MB, minimum=1))
    if max_response_mb > MAX_RESPONSE_MB:
        raise AdapterConfigError(
            f"dialogflow: max_response_mb is at most {MAX_RESPONSE_MB}, got {max_response_mb}"
        )
    endpoint = _text(opts, "api_endpoint") or endpoint_for(location)

    ttl_raw = opts.get("session_ttl")
    ttl = None
    if ttl_raw not in (None, ""):
        ttl = int(_number(opts, "session_ttl", 0, minimum=1))
        if ttl > MAX_SESSION_TTL:
            raise AdapterConfigError(
                f"dialogflow: session_ttl is at most {MAX_SESSION_TTL} s (one day), got {ttl}"
            )

    view = str(opts.get("response_view") or "default").lower()
    if view not in _VIEWS:
        raise AdapterConfigError(
            f"dialogflow: response_view must be one of {', '.join(_VIEWS)}, got {view!r}"
        )
    rate = _number(opts, "rate_limit", 0.0)
    long_text = str(opts.get("long_text") or "fail").lower()
    if long_text not in ("fail", "split"):
        raise AdapterConfigError(f"dialogflow: long_text must be fail or split, got {long_text!r}")
    trace = str(opts.get("trace") or "compact").lower()
    if trace not in ("compact", "full"):
        raise AdapterConfigError(f"dialogflow: trace must be compact or full, got {trace!r}")
    task_params = opts.get("task_params")
    return DialogflowConfig(
        project_id=project,
        location=location,
        agent_id=agent,
        environment=environment,
        language_code=_text(opts, "language_code") or "en",
        credentials_file=str(Path(creds).expanduser()) if creds else None,
        api_endpoint=endpoint,
        emulator=emulator,
        session_params=parse_session_params(
            opts.get("session_param") or opts.get("session_params")
        ),
        session_ttl=ttl,
        timeout=_number(opts, "timeout", 60.0, minimum=0.001, maximum=MAX_SECONDS),
        call_deadline=_number(opts, "call_deadline", 300.0, minimum=0.001, maximum=MAX_SECONDS),
        max_attempts=int(_number(opts, "max_attempts", 10, minimum=1, maximum=MAX_ATTEMPTS)),
        retry_initial=_number(opts, "retry_initial", 1.0, maximum=MAX_SECONDS),
        retry_max=_number(opts, "retry_max", 32.0, maximum=MAX_SECONDS),
        ambiguous_retries=int(_number(opts, "ambiguous_retries", 1, maximum=MAX_ATTEMPTS)),
        rate_limit=rate or None,
        response_view=_VIEWS[view],
        quota_project_id=_text(opts, "quota_project_id"),
        task_params=bool(emulator) if task_params in (None, "") else _bool(task_params),
        default_split=_text(opts, "task_split") or "test",
        # The service takes 256 characters; the emulator any length (pass text_limit to
        # rehearse the real limit against it).
        text_limit=int(_number(opts, "text_limit", 0 if emulator else 256, minimum=0)),
        long_text=long_text,
        trace=trace,
        max_response_mb=max_response_mb,
    )


def session_id_for(session: SessionContext) -> str:
    """The session id Dialogflow sees: the episode's id when it fits (≤ 36 characters)."""
    sid = str(session.session_id)
    if len(sid) <= MAX_SESSION_ID and _SESSION_ID.match(sid):
        return sid
    import hashlib

    return hashlib.sha256(sid.encode()).hexdigest()[:MAX_SESSION_ID]
