"""Loading an HTTP bot config: how to talk to a chatbot, validated with precise messages.

A config is a YAML or JSON file (or a mapping). Loading it: read -> merge over the file
it `extends` (a path relative to it, recursively) -> merge over its `preset` (a key set
to null removes the inherited key) -> substitute `${ENV}` references ->
validate with pydantic (unknown keys are errors) -> check every template variable and
JMESPath expression. Every error names the file and the offending key.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import yaml
from pydantic import ValidationError

from adapters.http.config import BotConfig, ConfigError, LoadedConfig
from adapters.http.config_checks import check_jmespath, check_templates, format_validation
from adapters.http.envsubst import EnvSubstError, Substituted, substitute
from adapters.http.presets import UnknownPresetError, load_preset
from adapters.http.unique_keys import DuplicateKeyError, load_json, load_yaml
from tau_adapters import jsonsafe
from tau_adapters.redaction import mask_values

_SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASS|AUTH|CRED|COOKIE|SIGNATURE", re.IGNORECASE)


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


MAX_DEPTH = jsonsafe.MAX_DEPTH
"""Deepest nesting of a config (as for a bot's JSON reply): far beyond any real config."""


def _read(path: Path) -> Any:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read HTTP bot config {path}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at line {line}, "
            f"offset {exc.start})"
        ) from None
    try:
        value = load_json(text) if path.suffix.lower() == ".json" else load_yaml(text)
    except DuplicateKeyError as exc:
        raise ConfigError(f"{path}: {exc}: one would silently replace the other") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}: not valid YAML{where}") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested deeper than {MAX_DEPTH} levels") from None
    _check_size(value, str(path))
    return value


def _check_size(value: Any, name: str) -> None:
    """A one-line error when `value` nests too deep or holds too many values, aliases
    counted expanded (`tau_adapters.jsonsafe.size_problem`)."""
    problem = jsonsafe.size_problem(value)
    if problem is not None:
        raise ConfigError(f"{name}: {problem.replace('document:', 'config:', 1)}")


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


def _env_secrets(seen: Substituted, public: Collection[str], secret: Collection[str]) -> list[str]:
    """The environment values read that are secret (docs/http-adapter.md)."""
    out: list[str] = []
    for name, value in seen.values.items():
        if name in public:
            continue
        places = seen.locations.get(name, [])
        only_url = all(p in ("base_url", "name") for p in places)
        if only_url and not _SECRET_NAME.search(name) and name not in secret:
            continue
        out.append(value)
    return out


def url_credentials(url: Any) -> list[str]:
    """The secrets of a URL's userinfo (`https://user:PASS@host`): the password as written
    and decoded, and the `Basic` credentials httpx sends in `Authorization` for it (a bot
    that echoes its request headers echoes those). Whatever variable it came from, and
    even in `base_url`, a password is a credential."""
    if not isinstance(url, str) or "@" not in url:
        return []
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return []
    if user is None and password is None:
        return []
    pair = f"{unquote(user or '')}:{unquote(password or '')}"
    out = [base64.b64encode(pair.encode("utf-8")).decode("ascii")]
    if password:
        out += [password, unquote(password)]
    return out


def _secrets(seen: Substituted, cfg: BotConfig) -> list[str]:
    out = _env_secrets(seen, cfg.public_env, cfg.secret_env)
    # A value pasted with a blank at an end ("tok ") is sent trimmed (headers are).
    out += [value.strip() for value in out]
    specs = [cfg.message, cfg.health, cfg.session.start, cfg.session.end]
    urls = [cfg.base_url, cfg.tool_results.path, *(s.path for s in specs if s is not None)]
    for url in urls:
        out.extend(url_credentials(url))
    header_maps = [cfg.headers, cfg.message.headers, cfg.tool_results.headers or {}]
    header_maps += [s.headers for s in specs[1:] if s is not None]
    for headers in header_maps:
        for header, value in headers.items():
            if _SECRET_NAME.search(header):
                out.extend(_header_secret_parts(value))
    # Longest first, so a value containing another is replaced whole.
    return sorted({s for s in out if len(s) >= 4}, key=len, reverse=True)


def _error_secrets(seen: Substituted, raw: Any) -> list[str]:
    """What to mask in a load error, before the config is known to be valid: the values
    `_secrets` would keep, read from the unvalidated mapping (a malformed `public_env`
    makes no value public), and every literal credential-like header value."""
    doc = raw if isinstance(raw, Mapping) else {}

    def names(key: str) -> set[str]:
        listed = doc.get(key)
        return {n for n in listed if isinstance(n, str)} if isinstance(listed, list) else set()

    out = _env_secrets(seen, names("public_env"), names("secret_env"))
    out.extend(url_credentials(doc.get("base_url")))
    sections = [doc, *(doc.get(k) for k in ("message", "tool_results", "health"))]
    session = doc.get("session")
    if isinstance(session, Mapping):
        sections += [session.get("start"), session.get("end")]
    for section in sections:
        if isinstance(section, Mapping) and section is not doc:
            out.extend(url_credentials(section.get("path")))
    for section in sections:
        headers = section.get("headers") if isinstance(section, Mapping) else None
        if not isinstance(headers, Mapping):
            continue
        for header, value in headers.items():
            if isinstance(value, str) and _SECRET_NAME.search(str(header)):
                out.extend(_header_secret_parts(value))
    return out


def _header_secret_parts(value: str) -> list[str]:
    value = value.strip(" \t")
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
        _check_size(source, "http config")
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
        cfg = _validated(name, substituted)
    except ConfigError as exc:
        # A message may quote a value (`base_url: ... got 'https//...?key=...'`): every
        # secret read from the environment is masked, wherever it appears.
        raise ConfigError(mask_values(str(exc), _error_secrets(seen, substituted))) from None
    return LoadedConfig(config=cfg, secrets=_secrets(seen, cfg), source=name)


def _validated(name: str, substituted: Any) -> BotConfig:
    try:
        cfg = BotConfig.model_validate(substituted)
    except ValidationError as exc:
        raise ConfigError(format_validation(name, exc)) from None
    check_templates(name, cfg)
    check_jmespath(name, cfg)
    return cfg
