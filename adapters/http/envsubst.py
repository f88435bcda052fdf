"""`${NAME}` / `${NAME:-default}` in config strings, remembering what came from the environment.

Values read from the environment are usually secrets (tokens, keys): the loader keeps them
so the adapter can redact them from recorded payloads and error messages.

The syntax, exactly: `${NAME}` (NAME: a letter or `_`, then letters, digits, `_`),
`${NAME:-default}` (the default holds no `$`, `{` or `}`), and `$$` for a literal `$`.
Any other `${` (`${ NAME }`, `${NAME-x}`, `${1X}`, `${A:-{x}}`, an unclosed `${A`) is an
error naming the key: a typo must not be sent to the bot as literal text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_VAR = re.compile(
    r"\$\$"
    r"|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^${}]*))?\}"
    r"|(?P<bad>\$\{)"
)
_SHOWN = 40  # characters of a bad reference quoted in the error


class EnvSubstError(ValueError):
    """A `${NAME}` without a default names an unset environment variable, or a `${...}`
    is not a valid reference."""


@dataclass
class Substituted:
    """Which environment variables were read, and where (dotted config locations)."""

    values: dict[str, str] = field(default_factory=dict)
    locations: dict[str, list[str]] = field(default_factory=dict)


def _bad_reference(text: str, start: int, where: str) -> EnvSubstError:
    end = text.find("}", start)
    shown = text[start : end + 1] if end != -1 else text[start:]
    if len(shown) > _SHOWN:
        shown = shown[:_SHOWN] + "..."
    return EnvSubstError(
        f"{where or 'config'}: {shown!r} is not a valid environment reference "
        "(write ${NAME} or ${NAME:-default}; NAME is letters, digits and _, not starting "
        "with a digit; a default holds no $, { or }; $$ is a literal $)"
    )


def substitute(value: Any, environ: Mapping[str, str], where: str, seen: Substituted) -> Any:
    """`value` with every `${...}` in its strings replaced; `$$` is a literal `$`."""
    if isinstance(value, str):

        def sub(match: re.Match[str]) -> str:
            if match.group(0) == "$$":
                return "$"
            if match.group("bad") is not None:
                raise _bad_reference(value, match.start(), where)
            name, default = match.group("name"), match.group("default")
            if name in environ:
                text = environ[name]
                seen.values[name] = text
                seen.locations.setdefault(name, []).append(where)
                return text
            if default is not None:
                return default
            raise EnvSubstError(f"{where or 'config'}: environment variable {name} is not set")

        return _VAR.sub(sub, value) if "$" in value else value
    if isinstance(value, Mapping):
        return {
            k: substitute(v, environ, f"{where}.{k}" if where else str(k), seen)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [substitute(v, environ, f"{where}[{i}]", seen) for i, v in enumerate(value)]
    return value
