"""Request templates that keep JSON types.

A template is any JSON/YAML value. Its string leaves are rendered against the episode's
variables:

* a leaf that is exactly one placeholder, `"{{ history }}"`, becomes the variable's value
  with its own type (a list stays a list, a number a number, a missing value `null`);
* any other string containing placeholders, `"Bearer {{ token }}"`, is interpolated and
  stays a string (strings are inserted as they are, other values as compact JSON, `null`
  as the empty string).

A placeholder names a variable, optionally followed by dotted keys or list indexes:
`{{ tool_result.content }}`, `{{ history.0.role }}`. Dict keys are rendered too.

One filter exists: `{{ value | tojson }}` is the value as JSON text (a string becomes a
quoted, escaped JSON string literal). It builds a JSON document inside a string, e.g. a
bot that wants each tool result as a message holding JSON. Nothing else is evaluated:
templates are data, not code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

_INNER = r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\s*(?:\|\s*([A-Za-z_]+)\s*)?\}\}"
PLACEHOLDER = re.compile(_INNER)
_WHOLE = re.compile(r"^\s*" + _INNER + r"\s*$")
FILTERS = frozenset({"tojson"})


class TemplateError(ValueError):
    """A template names a variable that does not exist or a path that does not resolve."""


def lookup(variables: Mapping[str, Any], dotted: str) -> Any:
    """The value at `dotted` (`name.key.0`); None where an intermediate value is missing."""
    head, *rest = dotted.split(".")
    if head not in variables:
        raise TemplateError(f"unknown template variable {head!r}")
    value: Any = variables[head]
    for part in rest:
        if isinstance(value, Mapping):
            value = value.get(part)
        elif isinstance(value, list) and part.lstrip("-").isdigit():
            index = int(part)
            value = value[index] if -len(value) <= index < len(value) else None
        else:
            return None
    return value


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _tojson(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _check_filter(match: re.Match[str]) -> None:
    name = match.group(2)
    if name and name not in FILTERS:
        raise TemplateError(f"unknown template filter {name!r} (known: {', '.join(FILTERS)})")


def render_string(
    text: str, variables: Mapping[str, Any], *, quote: Callable[[str], str] | None = None
) -> str:
    """Interpolate every placeholder of `text`; the result is always a string."""

    def sub(match: re.Match[str]) -> str:
        value = lookup(variables, match.group(1))
        piece = _tojson(value) if match.group(2) else _as_text(value)
        return quote(piece) if quote is not None else piece

    return PLACEHOLDER.sub(sub, text)


def render(template: Any, variables: Mapping[str, Any]) -> Any:
    """Render a template structure (see the module docstring for the rules)."""
    if isinstance(template, str):
        whole = _WHOLE.match(template)
        if whole:
            value = lookup(variables, whole.group(1))
            return _tojson(value) if whole.group(2) else value
        if "{{" in template:
            return render_string(template, variables)
        return template
    if isinstance(template, Mapping):
        return {
            (render_string(k, variables) if isinstance(k, str) else k): render(v, variables)
            for k, v in template.items()
        }
    if isinstance(template, list):
        return [render(item, variables) for item in template]
    return template


def placeholders(template: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """Every (location, variable name) a template refers to, for validation at load time
    (`TemplateError` on an unknown filter)."""
    if isinstance(template, str):
        for match in PLACEHOLDER.finditer(template):
            _check_filter(match)
            yield where, match.group(1).split(".")[0]
    elif isinstance(template, Mapping):
        for key, value in template.items():
            sub = f"{where}.{key}" if where else str(key)
            if isinstance(key, str):
                for match in PLACEHOLDER.finditer(key):
                    _check_filter(match)
                    yield sub, match.group(1).split(".")[0]
            yield from placeholders(value, sub)
    elif isinstance(template, list):
        for i, item in enumerate(template):
            yield from placeholders(item, f"{where}[{i}]")
