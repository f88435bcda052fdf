"""`${NAME}` / `${NAME:-default}` in config strings, remembering what came from the environment.

Values read from the environment are usually secrets (tokens, keys): the loader keeps them
so the adapter can redact them from recorded payloads and error messages.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_VAR = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class EnvSubstError(ValueError):
    """A `${NAME}` without a default names an unset environment variable."""


@dataclass
class Substituted:
    """Which environment variables were read, and where (dotted config locations)."""

    values: dict[str, str] = field(default_factory=dict)
    locations: dict[str, list[str]] = field(default_factory=dict)


def substitute(value: Any, environ: Mapping[str, str], where: str, seen: Substituted) -> Any:
    """`value` with every `${...}` in its strings replaced; `$$` is a literal `$`."""
    if isinstance(value, str):

        def sub(match: re.Match[str]) -> str:
            if match.group(0) == "$$":
                return "$"
            name, default = match.group(1), match.group(2)
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
