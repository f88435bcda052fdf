"""Adapter options: each adapter declares its own, as a pydantic model, with its CLI flags.

An adapter's `build` function carries its options model (`build.options_model = Options`).
Every field is an option of the run's `agent_options`; its command-line flags are
`--field-name` and `--field_name`, or the spellings listed in
`Field(json_schema_extra={"flags": [...]})`. A list-typed field is a repeatable flag, a
bool field a switch. `json_schema_extra={"secret": True}` marks a value that must never
be shown (it is redacted in every record); `json_schema_extra={"path": True}` a file's
path (recorded absolute, so a resume finds it from any folder). The harness reads all
of this from here, so the core names no adapter and no adapter flag.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from tau_adapters.protocol import AdapterConfigError

MAX_SECONDS = 7 * 24 * 3600.0
"""The longest wait an option may set (a timeout, a deadline, a backoff): a week. Longer
is no deadline, and gRPC turns a deadline past its clock's range into one already
passed (every call then fails at once as DEADLINE_EXCEEDED)."""

MAX_RESPONSE_BYTES = 1 << 30
"""The largest reply an option may let a client read (1 GiB): a bound set past it no
longer protects the run's memory."""

MAX_ATTEMPTS = 100
"""The most attempts an option may give one call: past it a retry loop has no end in
sight, against a service that has said no a hundred times."""

MAX_ITEMS = 1_000_000
"""The most items (stream events, server messages, list pages) an option may let a client
read for one call: each is bounded in bytes too, but a count past a million is no bound
on the time a misbehaving service can keep a call busy."""


@dataclass(frozen=True)
class OptionFlag:
    """One adapter option as the command line sees it."""

    field: str
    flags: tuple[str, ...]
    help: str
    multiple: bool
    is_switch: bool
    secret: bool

    @property
    def off_flags(self) -> tuple[str, ...]:
        """A switch's spellings that turn it off (`--no-streaming`); none for others."""
        if not self.is_switch:
            return ()
        spellings = [f"--no-{f[2:]}" for f in self.flags]
        spellings += ["--no_" + f[2:].replace("-", "_") for f in self.flags]
        return tuple(dict.fromkeys(spellings))


def options_model(builder: Callable[..., Any]) -> type[BaseModel] | None:
    """The options model an adapter's `build` declares, if any."""
    model = getattr(builder, "options_model", None)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _extra(info: Any) -> dict[str, Any]:
    extra = info.json_schema_extra
    return dict(extra) if isinstance(extra, dict) else {}


def _is_list(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, set, frozenset):
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_is_list(a) for a in typing.get_args(annotation) if a is not type(None))
    return False


def _is_bool(annotation: Any) -> bool:
    if annotation is bool:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args == [bool]
    return False


def option_flags(model: type[BaseModel]) -> list[OptionFlag]:
    """The model's fields as command-line flags (dashed and underscored spellings)."""
    out: list[OptionFlag] = []
    for name, info in model.model_fields.items():
        extra = _extra(info)
        dashed = list(extra.get("flags") or ["--" + name.replace("_", "-")])
        spellings: list[str] = []
        for flag in dashed:
            for spelling in (flag, "--" + flag[2:].replace("-", "_")):
                if spelling not in spellings:
                    spellings.append(spelling)
        out.append(
            OptionFlag(
                field=name,
                flags=tuple(spellings),
                help=info.description or "",
                multiple=_is_list(info.annotation),
                is_switch=_is_bool(info.annotation),
                secret=bool(extra.get("secret")),
            )
        )
    return out


def secret_fields(model: type[BaseModel]) -> frozenset[str]:
    return frozenset(f.field for f in option_flags(model) if f.secret)


def path_fields(model: type[BaseModel]) -> frozenset[str]:
    """The options that name a file (`json_schema_extra={"path": True}`)."""
    return frozenset(
        name for name, info in model.model_fields.items() if _extra(info).get("path") is True
    )


def validate_options(name: str, model: type[BaseModel], options: Mapping[str, Any]) -> BaseModel:
    """`options` checked against the adapter's model: one line naming the first bad key.

    Keys the model does not declare are refused here whatever the model's own `extra`
    setting (a model may ignore extras because its `build` also sees the run's settings).
    """
    unknown = sorted(set(options) - set(model.model_fields))
    if unknown:
        known = ", ".join(sorted(model.model_fields))
        raise AdapterConfigError(f"{name}: unknown option {unknown[0]!r} (known: {known})")
    try:
        return model.model_validate(dict(options))
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error.get("loc", ())) or "options"
        if error.get("type") == "extra_forbidden":
            known = ", ".join(sorted(model.model_fields))
            raise AdapterConfigError(f"{name}: unknown option {where!r} (known: {known})") from None
        if error.get("type") == "missing":
            flags = [f.flags[0] for f in option_flags(model) if f.field == where]
            how = f"pass {flags[0]}" if flags else "set it in agent_options"
            raise AdapterConfigError(f"{name}: missing option {where}: {how}") from None
        raise AdapterConfigError(f"{name}: option {where}: {error.get('msg')}") from None


# What `KEY=TEMPLATE` options (session parameters, session variables, message metadata) may
# fill in for each episode, from the `SessionContext`.
SESSION_PLACEHOLDERS = frozenset({"task_id", "user_id", "trial", "session_id", "env", "task_split"})


def key_template_list(value: Any) -> Any:
    """`KEY=TEMPLATE` entries as a list: one string, a mapping or a list (pydantic `before`)."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [f"{k}={v}" for k, v in value.items()]
    return value


def check_key_templates(entries: list[str]) -> list[str]:
    """Each entry is `KEY=TEMPLATE` whose placeholders are plain `{field}`s of
    `SESSION_PLACEHOLDERS`; ValueError (one line) otherwise. A conversion (`{task_id!r}`)
    or a format spec (`{task_id:>99}`) is refused: it could fail for some episode's value
    or blow a value up to any size (`{task_id:>999999999}` is a gigabyte), and the
    placeholders are plain strings and numbers that need neither."""
    import string

    for entry in entries:
        key, sep, template = entry.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected KEY=TEMPLATE, got {entry!r}")
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as exc:
            raise ValueError(f"bad template {template!r} ({exc})") from None
        names = [n for _, n, _, _ in parsed if n is not None]
        for _, name, spec, conversion in parsed:
            if name is not None and (spec or conversion):
                raise ValueError(
                    f"bad template {template!r}: only plain placeholders such as "
                    f"{{{name}}} are allowed (no !conversion, no :format)"
                )
        unknown = sorted(n for n in names if n not in SESSION_PLACEHOLDERS)
        if unknown or "" in names:
            known = ", ".join("{" + f + "}" for f in sorted(SESSION_PLACEHOLDERS))
            raise ValueError(f"unknown placeholder {{{(unknown or [''])[0]}}} (known: {known})")
    return entries
