"""The HTTP bot configuration: how to talk to a chatbot, validated with precise messages.

A config is a YAML or JSON file (or a mapping). Loading it: read -> merge over the file
it `extends` (a path relative to it, recursively) -> merge over its `preset` (a key set
to null removes the inherited key) -> substitute `${ENV}` references ->
validate with pydantic (unknown keys are errors) -> check every template variable and
JMESPath expression. Every error names the file and the offending key.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import jmespath
import yaml
from jmespath.exceptions import JMESPathError
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from adapters.http.envsubst import EnvSubstError, Substituted, substitute
from adapters.http.presets import UnknownPresetError, load_preset
from adapters.http.templates import TemplateError, placeholders

# Variables a template may use (see docs/http-adapter.md for their meaning).
VARIABLES = frozenset(
    {
        "session_id",
        "bot_session_id",
        "domain",
        "task_id",
        "user_id",
        "trial",
        "turn",
        "message",
        "history",
        "messages",
        "policy",
        "tools",
        "tool_results",
        "tool_result",
        "tool_server_url",
        "tool_session_id",
        "tool_session_url",
        "tool_token",
        "tool_mcp_url",
        "tool_openapi_url",
    }
)

_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASS|AUTH|CRED|COOKIE|SIGNATURE", re.IGNORECASE)


class ConfigError(ValueError):
    """The config cannot be used; the message names the file and key."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Timeouts(_Model):
    """httpx's per-operation timeouts, plus two total deadlines: `total` bounds one attempt
    from sending to the last byte (a bot that drips bytes or streams keep-alives never
    trips a per-read timeout), `call` bounds a call with all its retries and waits."""

    connect: float = Field(default=10.0, gt=0)
    read: float = Field(default=60.0, gt=0)
    write: float = Field(default=30.0, gt=0)
    pool: float = Field(default=10.0, gt=0)
    total: float = Field(default=120.0, gt=0)
    call: float = Field(default=600.0, gt=0)


class RetryConfig(_Model):
    """429/503 (by default) are retried honouring Retry-After; so are connection errors."""

    max_attempts: int = Field(default=10, ge=1, le=50)
    statuses: list[int] = Field(default_factory=lambda: [429, 503])
    backoff_initial: float = Field(default=0.5, ge=0)
    backoff_max: float = Field(default=30.0, ge=0)
    retry_after_max: float = Field(default=120.0, ge=0)
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


class ToolResultsConfig(_Model):
    """How observations go back: each field left out is taken from `message`."""

    mode: Literal["batch", "each"] = "batch"
    method: str | None = None
    path: str | None = None
    headers: dict[str, str] | None = None
    query: dict[str, Any] | None = None
    body: Any = None
    stream: Literal["json", "sse", "none"] | None = None

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
    ttl: float = Field(default=3600.0, gt=0)


class BotConfig(_Model):
    preset: str | None = None
    name: str | None = None
    base_url: str
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: float | Timeouts = Field(default_factory=Timeouts)
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
    max_response_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s]+", value):
            raise ValueError(f"must be an http:// or https:// URL, got {value!r}")
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


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, Mapping) and isinstance(over, Mapping):
        out = dict(base)
        for key, value in over.items():
            if value is None:
                out.pop(key, None)
            elif key in out:
                out[key] = _merge(out[key], value)
            else:
                out[key] = value
        return out
    return over


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read HTTP bot config {path}: {exc.strerror}") from None
    try:
        if path.suffix.lower() == ".json":
            return json.loads(text)
        return yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}: not valid YAML{where}") from None


_MAX_EXTENDS = 10


def _read_extended(path: Path, chain: list[Path]) -> dict[str, Any]:
    """A config file with the file it `extends` (relative to it) merged underneath."""
    raw = _read(path)
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a mapping of keys at the top level")
    return _extended(dict(raw), str(path), path.parent, [*chain, path.resolve()])


def _extended(raw: dict[str, Any], name: str, base: Path, chain: list[Path]) -> dict[str, Any]:
    parent = raw.pop("extends", None)
    if parent is None:
        return raw
    if not isinstance(parent, str) or not parent.strip():
        raise ConfigError(f"{name}: extends: expected the path of another config file")
    target = (base / os.path.expanduser(parent)).resolve()
    if target in chain:
        raise ConfigError(f"{name}: extends: {parent} extends itself (a cycle)")
    if len(chain) >= _MAX_EXTENDS:
        raise ConfigError(f"{name}: extends: more than {_MAX_EXTENDS} levels")
    merged: dict[str, Any] = _merge(_read_extended(target, chain), raw)
    return merged


def _loc(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif item in ("float", "Timeouts", "function-after[_url(), str]"):
            continue
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts) or "config"


def _format_validation(source: str, exc: ValidationError) -> str:
    errors = []
    for err in exc.errors():
        where = _loc(tuple(err["loc"]))
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            loc = tuple(err["loc"])
            model = _model_at(tuple(x for x in loc[:-1] if x not in ("Timeouts",)))
            known = model.model_fields if model is not None else {}
            msg = "unknown key" + _did_you_mean(str(loc[-1]), known)
        elif err["type"] == "missing":
            msg = "required key is missing"
        msg = msg.removeprefix("Value error, ")
        errors.append(f"{where}: {msg}")
    # A union (timeout) reports once per member; keep the first of identical locations.
    unique = list(dict.fromkeys(errors))
    return f"{source}: " + "; ".join(unique)


def _check_templates(source: str, cfg: BotConfig) -> None:
    templates: dict[str, Any] = {
        "headers": cfg.headers,
        "session.id": cfg.session.id,
        "message": cfg.message.model_dump(),
        "tool_results": cfg.tool_results.model_dump(),
    }
    if cfg.session.start is not None:
        templates["session.start"] = cfg.session.start.model_dump()
    if cfg.session.end is not None:
        templates["session.end"] = cfg.session.end.model_dump()
    if cfg.health is not None:
        templates["health"] = cfg.health.model_dump()
    for prefix, template in templates.items():
        try:
            found = list(placeholders(template))
        except TemplateError as exc:
            raise ConfigError(f"{source}: {prefix}: {exc}") from None
        for where, name in found:
            if name not in VARIABLES:
                key = f"{prefix}.{where}" if where else prefix
                raise ConfigError(
                    f"{source}: {key}: unknown template variable {name!r}"
                    f"{_did_you_mean(name, VARIABLES)} (known: {', '.join(sorted(VARIABLES))})"
                )
    tool_vars = {
        n for n in VARIABLES if n.startswith("tool_") and n not in ("tool_results", "tool_result")
    }
    if not cfg.server_tools.enabled:
        for prefix, template in templates.items():
            for where, name in placeholders(template):
                if name in tool_vars:
                    key = f"{prefix}.{where}" if where else prefix
                    raise ConfigError(
                        f"{source}: {key}: {name!r} needs `server_tools: {{enabled: true}}`"
                    )


def _check_jmespath(source: str, cfg: BotConfig) -> None:
    r = cfg.response
    exprs = {
        "response.messages": r.messages,
        "response.tool_calls": r.tool_calls,
        "response.end": r.end,
        "response.handoff": r.handoff,
        "response.tool_call.id": r.tool_call.id,
        "response.tool_call.name": r.tool_call.name,
        "response.tool_call.arguments": r.tool_call.arguments,
        "session.id_path": cfg.session.id_path,
    }
    if r.usage is not None:
        exprs["response.usage.prompt_tokens"] = r.usage.prompt_tokens
        exprs["response.usage.completion_tokens"] = r.usage.completion_tokens
    for key, expr in exprs.items():
        if not expr:
            continue
        try:
            jmespath.compile(expr)
        except JMESPathError as exc:
            raise ConfigError(f"{source}: {key}: {jmespath_message(expr, exc)}") from None


def jmespath_message(expr: str, exc: JMESPathError) -> str:
    """The whole of a JMESPath error on one line: what is wrong and where."""
    what = getattr(exc, "msg", "") or str(exc).splitlines()[0]
    token = getattr(exc, "token_value", None)
    if token is not None and str(token) not in what:
        what += f" {token!r}"
    if isinstance(exc, jmespath.exceptions.IncompleteExpressionError):
        what = "incomplete expression (an unclosed bracket, quote or filter?)"
    pos = getattr(exc, "lex_position", None)
    where = ""
    if isinstance(pos, int) and 0 <= pos <= len(expr):
        where = f" at column {pos + 1}: {expr[:pos]}<HERE>{expr[pos:]}"
    return f"invalid JMESPath {expr!r}: {what}{where}"


def _did_you_mean(name: str, known: Any) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model whose fields live at `loc` (for suggesting a key)."""
    model: Any = BotConfig
    for item in loc:
        if isinstance(item, int) or model is None:
            continue
        field_info = model.model_fields.get(item)
        if field_info is None:
            return None
        model = _model_of(field_info.annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _model_of(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def _secrets(seen: Substituted, cfg: BotConfig) -> list[str]:
    out: list[str] = []
    for name, value in seen.values.items():
        if name in cfg.public_env:
            continue
        places = seen.locations.get(name, [])
        only_url = all(p in ("base_url", "name") for p in places)
        if only_url and not _SECRET_NAME.search(name) and name not in cfg.secret_env:
            continue
        out.append(value)
    header_maps = [cfg.headers, cfg.message.headers, cfg.tool_results.headers or {}]
    header_maps += [s.headers for s in (cfg.session.start, cfg.session.end) if s is not None]
    for headers in header_maps:
        for header, value in headers.items():
            if _SECRET_NAME.search(header):
                out.extend(_header_secret_parts(value))
    # Longest first, so a value containing another is replaced whole.
    return sorted({s for s in out if len(s) >= 4}, key=len, reverse=True)


def _header_secret_parts(value: str) -> list[str]:
    if "{{" in value:
        return []
    parts = [value]
    scheme, _, rest = value.partition(" ")
    if rest and scheme.lower() in ("bearer", "basic", "token", "apikey"):
        parts.append(rest)
    return parts


def load_config(
    source: str | Path | Mapping[str, Any],
    *,
    environ: Mapping[str, str] | None = None,
) -> LoadedConfig:
    """Read, merge over the preset, substitute the environment, validate."""
    env = os.environ if environ is None else environ
    if isinstance(source, Mapping):
        raw: Any = _extended(dict(source), "http config", Path.cwd(), [])
        name = "http config"
    else:
        path = Path(source)
        name = str(path)
        raw = _read_extended(path, [])
    preset = raw.get("preset")
    if preset is not None:
        if not isinstance(preset, str):
            raise ConfigError(f"{name}: preset: expected a preset name")
        try:
            raw = _merge(load_preset(preset), raw)
        except UnknownPresetError as exc:
            raise ConfigError(f"{name}: preset: {exc}") from None
    seen = Substituted()
    try:
        substituted = substitute(raw, env, "", seen)
    except EnvSubstError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    try:
        cfg = BotConfig.model_validate(substituted)
    except ValidationError as exc:
        raise ConfigError(_format_validation(name, exc)) from None
    _check_templates(name, cfg)
    _check_jmespath(name, cfg)
    return LoadedConfig(config=cfg, secrets=_secrets(seen, cfg), source=name)
