"""Options of the CES adapter: one pydantic model, validated before any network call.

Light imports only (no gRPC, no google.*): the registry reads this model to build the
`--field-name` flags of `tau run` without paying for the client library. Resource names
are normalised here: `--app-id` takes an id or the full `projects/P/locations/L/apps/A`,
`--deployment` and `--entry-agent` an id or a full name under that app.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tau_adapters.options import (
    MAX_ATTEMPTS,
    MAX_ITEMS,
    MAX_RESPONSE_BYTES,
    MAX_SECONDS,
    check_key_templates,
    key_template_list,
)

EMULATOR_ENV = "CES_EMULATOR_HOST"
GLOBAL_ENDPOINT = "ces.googleapis.com"

_APP_NAME = re.compile(r"^projects/([^/]+)/locations/([^/]+)/apps/([^/]+)$")
_ID = re.compile(r"^[A-Za-z0-9_.:-]+$")
_HOST = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)$")
MIB = 1 << 20


def check_host_port(value: str, *, what: str = "host:port", allow_zero: bool = False) -> str:
    """`value` when it is `host:port` with a plain host and a port in 1-65535 (0-65535 when
    `allow_zero`: a server's "any free port"); ValueError (one line) otherwise. grpc would
    silently wrap an out-of-range port onto another one."""
    host, sep, port = value.strip().rpartition(":")
    if not sep or not host or not _HOST.fullmatch(host):
        raise ValueError(f"expected {what} as HOST:PORT, got {value!r}")
    check_port(port, allow_zero=allow_zero)
    return f"{host}:{int(port)}"


def check_port(port: str | int, *, allow_zero: bool = False) -> int:
    """The port number, or ValueError (one line) when it is not in 1-65535 (0-65535)."""
    text = str(port).strip()
    low = 0 if allow_zero else 1
    if not text.isdigit() or not low <= int(text) <= 65535:
        raise ValueError(f"bad port {str(port)!r}: expected a number in {low}-65535")
    return int(text)


def endpoint_for(location: str) -> str:
    """`global` apps use ces.googleapis.com; a region (`us`, `eu`) its regional endpoint."""
    if location in ("", "global"):
        return GLOBAL_ENDPOINT
    return f"ces.{location}.rep.googleapis.com"


class Options(BaseModel):
    """Where the CES app lives, how to reach it, and how hard to try."""

    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    app_id: str = Field(
        description="The app's id, or its full name projects/P/locations/L/apps/A.",
        json_schema_extra={"flags": ["--app", "--ces-app"]},
    )
    project_id: str | None = Field(None, description="GCP project (unless app_id is a full name).")
    location: str = Field("us", description="The app's location: us, eu, global...")
    deployment: str | None = Field(
        None, description="Deployment id or full name to talk to (else the draft app)."
    )
    entry_agent: str | None = Field(
        None, description="Agent id or full name that starts the session (else the root agent)."
    )
    time_zone: str | None = Field(None, description="IANA time zone of the simulated user.")
    credentials_file: str | None = Field(
        None,
        description="Any google.auth credentials file (service account, authorized user, "
        "external account); else Application Default Credentials.",
        json_schema_extra={"flags": ["--gcp-sa-file"], "path": True},
    )
    quota_project_id: str | None = Field(None, description="Project billed for quota.")
    api_endpoint: str | None = Field(None, description="Override the regional endpoint host.")
    emulator: str | None = Field(
        None, description=f"host:port of a local emulator (or ${EMULATOR_ENV}); no TLS, no auth."
    )
    streaming: bool = Field(False, description="Use BidiRunSession (one stream per episode).")
    task_variables: bool | None = Field(
        None,
        description="Send env, task_id, task_split, user_id, trial as session variables "
        "(default: only to an emulator, whose oracle brain needs them).",
    )
    variables: list[str] = Field(
        default_factory=list,
        description="Extra session variables KEY=TEMPLATE, e.g. customer={user_id}.",
        json_schema_extra={"flags": ["--session-variable"]},
    )
    task_split: str = Field("test", description="Split name sent with task_variables.")
    timeout: float = Field(
        60.0, gt=0, le=MAX_SECONDS, description="Seconds per attempt of one call."
    )
    deadline: float = Field(
        300.0, gt=0, le=MAX_SECONDS, description="Seconds per call, all retries included."
    )
    max_attempts: int = Field(
        6, ge=1, le=MAX_ATTEMPTS, description="Attempts for UNAVAILABLE/RESOURCE_EXHAUSTED."
    )
    retry_initial: float = Field(
        1.0, ge=0, le=MAX_SECONDS, description="First backoff delay (seconds)."
    )
    retry_max: float = Field(
        32.0, ge=0, le=MAX_SECONDS, description="Largest backoff delay (seconds)."
    )
    ambiguous_retries: int = Field(
        1, ge=0, le=1, description="Retries of DEADLINE_EXCEEDED/INTERNAL (0 or 1)."
    )
    max_response_bytes: int = Field(
        8 * MIB,
        ge=4096,
        le=256 * MIB,
        description="Largest gRPC message accepted from the service (bytes); a larger one "
        "fails the call for good (protocol error).",
    )
    max_turn_messages: int = Field(
        10_000,
        ge=1,
        le=MAX_ITEMS,
        description="With streaming: most server messages read for one turn before "
        "giving up (protocol error).",
    )
    max_turn_bytes: int = Field(
        16 * MIB,
        ge=4096,
        le=MAX_RESPONSE_BYTES,
        description="With streaming: most bytes of server messages read for one turn "
        "before giving up (protocol error).",
    )
    max_pages: int = Field(
        100, ge=1, le=MAX_ITEMS, description="Most pages read from one List call (ListTools...)."
    )

    @field_validator("variables", mode="before")
    @classmethod
    def _variables_list(cls, value: Any) -> Any:
        return key_template_list(value)

    @field_validator("variables")
    @classmethod
    def _variables_check(cls, value: list[str]) -> list[str]:
        return check_key_templates(value)

    @field_validator("credentials_file")
    @classmethod
    def _check_credentials(cls, value: str | None) -> str | None:
        if not value:
            return None
        path = Path(value).expanduser()
        if not path.is_file():
            raise ValueError(f"credentials file not found: {value}")
        return str(path)

    @field_validator("emulator")
    @classmethod
    def _check_emulator(cls, value: str | None) -> str | None:
        if not value or not value.strip():
            return None
        return check_host_port(value, what="the emulator address")

    @model_validator(mode="before")
    @classmethod
    def _emulator_from_env(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("emulator") and os.environ.get(EMULATOR_ENV):
            data = {**data, "emulator": os.environ[EMULATOR_ENV]}
        return data

    @model_validator(mode="after")
    def _normalise_names(self) -> Options:
        app = self.app_id.strip()
        match = _APP_NAME.match(app)
        project = self.project_id
        if match:
            p, loc, a = match.groups()
            for label, part in (("project", p), ("location", loc), ("app", a)):
                if not _ID.fullmatch(part):
                    raise ValueError(f"app_id: bad {label} id {part!r} in the app name")
            if project and project != p:
                raise ValueError(f"project_id: {project!r} does not match the app name's {p!r}")
            if "location" in self.model_fields_set and self.location != loc:
                raise ValueError(
                    f"location: {self.location!r} does not match the app name's {loc!r}"
                )
            object.__setattr__(self, "project_id", p)
            object.__setattr__(self, "location", loc)
            object.__setattr__(self, "app_id", a)
        elif "/" in app or not _ID.fullmatch(app):
            raise ValueError(
                f"app_id: bad app id {app!r}: expected an id or projects/P/locations/L/apps/A"
            )
        elif not project:
            raise ValueError(
                "project_id: missing (pass --project-id, or a full app name as --app-id)"
            )
        for label, value in (("project_id", self.project_id), ("location", self.location)):
            if not value or not _ID.fullmatch(value):
                raise ValueError(f"{label}: bad value {value!r}")
        object.__setattr__(self, "deployment", self._child("deployment", self.deployment))
        object.__setattr__(self, "entry_agent", self._child("entry_agent", self.entry_agent))
        return self

    def _child(self, key: str, value: str | None) -> str | None:
        if not value:
            return None
        kind = "deployments" if key == "deployment" else "agents"
        prefix = f"{self.app_name}/{kind}/"
        if value.startswith("projects/"):
            if not value.startswith(prefix) or "/" in value[len(prefix) :]:
                raise ValueError(f"{key}: {value!r} is not one of the {kind} of {self.app_name}")
            if not _ID.fullmatch(value[len(prefix) :]):
                raise ValueError(f"{key}: bad id {value[len(prefix) :]!r}")
            return value
        if not _ID.fullmatch(value):
            raise ValueError(f"{key}: bad id {value!r}")
        return prefix + value

    # Derived values ----------------------------------------------------------------------
    @property
    def app_name(self) -> str:
        return f"projects/{self.project_id}/locations/{self.location}/apps/{self.app_id}"

    @property
    def endpoint(self) -> str:
        return self.api_endpoint or endpoint_for(self.location)

    @property
    def sends_task_variables(self) -> bool:
        return bool(self.emulator) if self.task_variables is None else self.task_variables

    def session_name(self, session_id: str) -> str:
        return f"{self.app_name}/sessions/{session_id}"


def merged(options: Any) -> dict[str, Any]:
    """The flat run options with a nested `agent_options` mapping laid over them (it wins);
    None values are dropped so the model's defaults apply."""
    flat = {str(k).replace("-", "_"): v for k, v in dict(options).items() if k != "agent_options"}
    nested = dict(options).get("agent_options")
    if isinstance(nested, dict):
        flat.update({str(k).replace("-", "_"): v for k, v in nested.items()})
    # Spellings the CLI may hand us under their flag names.
    for alias, name in (("gcp_sa_file", "credentials_file"), ("credentials", "credentials_file")):
        if flat.get(alias) and not flat.get(name):
            flat[name] = flat[alias]
    for alias, name in (("app", "app_id"), ("ces_app", "app_id")):
        if flat.get(alias) and not flat.get(name):
            flat[name] = flat[alias]
    if flat.get("session_variable") and not flat.get("variables"):
        flat["variables"] = flat["session_variable"]
    return {k: v for k, v in flat.items() if v is not None}
