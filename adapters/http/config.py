"""The HTTP bot configuration's schema: pydantic models, unknown keys are errors.

How a file becomes a `BotConfig` (extends, preset, `${ENV}`) is `config_load`; the checks
beyond the schema (template variables, JMESPath, messages naming the key) `config_checks`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tau_adapters.options import MAX_RESPONSE_BYTES, MAX_SECONDS

_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
# A header name is an RFC 9110 token; a value is printable ASCII, spaces and tabs (httpx
# sends no other: a line break or NUL is a protocol error, non-ASCII an encoding error).
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")


_SENDABLE_VALUE = re.compile(r"(?:[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?)?")


def sendable_header_value(value: str) -> bool:
    """Whether httpx (h11) sends `value` as a header value as it is: printable ASCII,
    spaces and tabs inside, none at either end."""
    return _SENDABLE_VALUE.fullmatch(value) is not None


def check_headers(headers: dict[str, str] | None) -> dict[str, str] | None:
    """The headers with blanks at either end of a value dropped (RFC 9110: they are not
    part of it, and h11 refuses to send them: `Bearer ${TOKEN} ` would fail every
    request), or a ValueError naming the first bad name or value (the value itself is not
    quoted: it may hold a credential)."""
    if headers is None:
        return None
    headers = {name: value.strip(" \t") for name, value in headers.items()}
    for name, value in headers.items():
        if not _HEADER_NAME.fullmatch(name):
            raise ValueError(
                f"{name!r} is not a valid header name (letters, digits and "
                "!#$%&'*+-.^_`|~ only: no spaces, colons or control characters)"
            )
        if not _HEADER_VALUE.fullmatch(value):
            raise ValueError(
                f"the value of header {name!r} holds a line break, NUL, other control "
                "character or non-ASCII character (only printable ASCII can be sent)"
            )
    return headers


def _usable_authority(url: str) -> bool:
    """Whether `url` names a host, and a port (if any) that a socket can connect to: a
    port past 65535 or not a number would otherwise fail each request deep in the
    network stack (`OverflowError` in an exception group), not as a config error."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError when out of range or not a number
    except ValueError:
        return False
    return bool(parts.hostname)


def check_path(path: str | None) -> str | None:
    """The path unchanged, or a ValueError when it is an absolute URL (without templates)
    whose host or port cannot be used, as for `base_url`."""
    if path is None or not path.startswith(("http://", "https://")) or "{{" in path:
        return path
    if not _usable_authority(path):
        raise ValueError(f"an absolute URL needs a host and a port from 0 to 65535, got {path!r}")
    return path


class ConfigError(ValueError):
    """The config cannot be used; the message names the file and key."""


class _Model(BaseModel):
    # No NaN or infinity: `read: .inf` would lift a deadline, and a NaN compares false.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Timeouts(_Model):
    """httpx's per-operation timeouts, plus two total deadlines: `total` bounds one attempt
    from sending to the last byte (a bot that drips bytes or streams keep-alives never
    trips a per-read timeout), `call` bounds a call with all its retries and waits."""

    connect: float = Field(default=10.0, gt=0, le=MAX_SECONDS)
    read: float = Field(default=60.0, gt=0, le=MAX_SECONDS)
    write: float = Field(default=30.0, gt=0, le=MAX_SECONDS)
    pool: float = Field(default=10.0, gt=0, le=MAX_SECONDS)
    total: float = Field(default=120.0, gt=0, le=MAX_SECONDS)
    call: float = Field(default=600.0, gt=0, le=MAX_SECONDS)


class RetryConfig(_Model):
    """429/503 (by default) are retried honouring Retry-After; so are connection errors."""

    max_attempts: int = Field(default=10, ge=1, le=50)
    statuses: list[int] = Field(default_factory=lambda: [429, 503])
    backoff_initial: float = Field(default=0.5, ge=0, le=MAX_SECONDS)
    backoff_max: float = Field(default=30.0, ge=0, le=MAX_SECONDS)
    retry_after_max: float = Field(default=120.0, ge=0, le=MAX_SECONDS)
    connection_errors: bool = True


class RequestSpec(_Model):
    """One HTTP call: method, path (joined to base_url, or an absolute URL), templates."""

    method: str = "POST"
    path: str = ""
    headers: dict[str, str] = Field(default_factory=dict)
    query: dict[str, Any] = Field(default_factory=dict)
    body: Any = None
    stream: Literal["json", "sse", "none"] = "json"

    @field_validator("method")
    @classmethod
    def _method(cls, value: str) -> str:
        upper = value.upper()
        if upper not in _METHODS:
            raise ValueError(f"must be one of {', '.join(_METHODS)}")
        return upper

    _headers = field_validator("headers")(check_headers)
    _path = field_validator("path")(check_path)


class ToolResultsConfig(_Model):
    """How observations go back: each field left out is taken from `message`."""

    mode: Literal["batch", "each"] = "batch"
    method: str | None = None
    path: str | None = None
    headers: dict[str, str] | None = None
    query: dict[str, Any] | None = None
    body: Any = None
    stream: Literal["json", "sse", "none"] | None = None

    _headers = field_validator("headers")(check_headers)
    _path = field_validator("path")(check_path)

    def request(self, message: RequestSpec) -> RequestSpec:
        return RequestSpec(
            method=self.method or message.method,
            path=self.path if self.path is not None else message.path,
            headers=self.headers if self.headers is not None else dict(message.headers),
            query=self.query if self.query is not None else dict(message.query),
            body=self.body if self.body is not None else message.body,
            stream=self.stream or message.stream,
        )


class SessionConfig(_Model):
    mode: Literal["client", "server", "stateless"] = "client"
    id: str = "{{ session_id }}"
    start: RequestSpec | None = None
    id_path: str | None = None
    end: RequestSpec | None = None

    @model_validator(mode="after")
    def _server_needs_start(self) -> SessionConfig:
        if self.mode == "server" and (self.start is None or not self.id_path):
            raise ValueError(
                "mode 'server' needs `start` (the call that creates a session) and `id_path`"
            )
        if self.id_path and self.start is None:
            raise ValueError("`id_path` needs `start`")
        return self


class ToolCallMapping(_Model):
    id: str | None = "id"
    name: str = "name"
    arguments: str = "arguments"


class SSEConfig(_Model):
    """Events become a JSON array (of their parsed `data`, or of {event, data, id} when
    `wrap`), which the response mapping then reads. With `group_by` (e.g. `message_id`),
    events whose data share that key's value become one: their `text` fields (`delta`)
    are concatenated into the first, so each streamed message is one item."""

    done: str | None = "[DONE]"
    wrap: bool = False
    group_by: str | None = None
    text: str = "delta"


class UsageMapping(_Model):
    prompt_tokens: str | None = None
    completion_tokens: str | None = None


class ResponseMapping(_Model):
    """JMESPath expressions over the reply (or over the array of SSE events)."""

    messages: str | None = None
    tool_calls: str | None = None
    tool_call: ToolCallMapping = Field(default_factory=ToolCallMapping)
    end: str | None = None
    handoff: str | None = None
    usage: UsageMapping | None = None
    sse: SSEConfig = Field(default_factory=SSEConfig)

    @model_validator(mode="after")
    def _something(self) -> ResponseMapping:
        if not (self.messages or self.tool_calls):
            raise ValueError("set at least one of `messages` and `tool_calls`")
        return self


class ServerToolsConfig(_Model):
    """Serve the domain tools to the bot (HTTP/OpenAPI and MCP), scored on the same DB."""

    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = Field(default=0, ge=0, le=65535)
    public_url: str | None = None
    ttl: float = Field(default=3600.0, gt=0, le=MAX_SECONDS)


class BotConfig(_Model):
    preset: str | None = None
    name: str | None = None
    base_url: str
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: float | Timeouts = Field(default_factory=Timeouts)
    """Seconds (> 0) for every phase of one attempt, or a `Timeouts` table."""
    retry: RetryConfig = Field(default_factory=RetryConfig)
    session: SessionConfig = Field(default_factory=SessionConfig)
    health: RequestSpec | None = None
    message: RequestSpec
    tool_results: ToolResultsConfig = Field(default_factory=ToolResultsConfig)
    response: ResponseMapping
    server_tools: ServerToolsConfig = Field(default_factory=ServerToolsConfig)
    secret_env: list[str] = Field(default_factory=list)
    public_env: list[str] = Field(default_factory=list)
    raw_max_chars: int = Field(default=20000, ge=100)
    max_response_bytes: int = Field(default=4 * 1024 * 1024, ge=1024, le=MAX_RESPONSE_BYTES)

    _headers = field_validator("headers")(check_headers)

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, value: Any) -> Any:
        """One clear message for a bad number (a union would report each member)."""
        if isinstance(value, dict | Timeouts):
            return value
        number: float | None = None
        if isinstance(value, int | float) and not isinstance(value, bool):
            number = float(value)
        elif isinstance(value, str):
            try:
                number = float(value.strip())
            except ValueError:
                number = None
        if number is None or not math.isfinite(number) or not 0 < number <= MAX_SECONDS:
            raise ValueError(
                f"must be a number of seconds greater than 0 and at most {MAX_SECONDS:g},"
                " or a table of connect/read/write/pool/total/call seconds"
            )
        return number

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s]+", value) or not _usable_authority(value):
            raise ValueError(
                f"must be an http:// or https:// URL with a host and a port from 0 to "
                f"65535, got {value!r}"
            )
        return value.rstrip("/")

    @property
    def timeouts(self) -> Timeouts:
        if isinstance(self.timeout, Timeouts):
            return self.timeout
        t = float(self.timeout)
        return Timeouts(connect=min(t, 10.0), read=t, write=t, pool=t, total=t)

    def tool_results_request(self) -> RequestSpec:
        return self.tool_results.request(self.message)


@dataclass
class LoadedConfig:
    """A validated config and the secret values to redact from anything recorded."""

    config: BotConfig
    secrets: list[str] = field(default_factory=list)
    source: str = "config"
