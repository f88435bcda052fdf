"""Hostile input from the network: JSON nested too deep, bytes a terminal would obey.

A bot, an agent's tool call or a client of the service may send JSON nested thousands of
levels deep: Python's decoder then raises `RecursionError` (not a `ValueError`), and
every recursive walk after it (redaction, JMESPath, scoring) would too. `loads` and
`check_depth` turn that into one clean `JSONDepthError` (a `ValueError`) at the edge.
`printable` escapes control characters so a reply can be shown on a terminal safely.

Depends on nothing but the standard library.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 100
"""Deepest nesting accepted: far beyond any real payload, far below the recursion limit."""


class JSONDepthError(ValueError):
    """A JSON document nested deeper than allowed."""

    def __init__(self, limit: int = MAX_DEPTH) -> None:
        super().__init__(f"JSON nested deeper than {limit} levels")
        self.limit = limit


def depth_exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether a decoded JSON-like value nests dicts/lists deeper than `limit` (iterative:
    safe on any depth)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


MAX_VALUES = 100_000
"""Most values a settings file may hold, every YAML alias counted as the copy it stands
for: far beyond any real config, far below what a "billion laughs" file stands for."""


def size_problem(
    value: Any, max_values: int = MAX_VALUES, max_depth: int = MAX_DEPTH
) -> str | None:
    """What is too big in a decoded document: `"<where>: more than N values ..."` or
    `"<where>: nested deeper than N levels"` (`where` a key path two levels deep at most,
    `message.body`), or None. Iterative, and it stops at the limit: it never expands an
    alias bomb, and follows a document that contains itself only that far."""
    count = 0
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        item, depth, where = stack.pop()
        count += 1
        if count > max_values:
            return (
                f"{where or 'document'}: more than {max_values:,} values (counting each "
                "YAML alias as the copy it stands for)"
            )
        if isinstance(item, dict):
            children: list[tuple[Any, str]] = [
                (v, f"{where}.{k}" if where else str(k)) for k, v in item.items()
            ]
        elif isinstance(item, list | tuple):
            children = [(v, where) for v in item]
        else:
            continue
        if depth > max_depth:
            return f"{where or 'document'}: nested deeper than {max_depth} levels"
        stack.extend((v, depth + 1, w if w.count(".") < 2 else where) for v, w in children)
    return None


def map_leaves(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """A copy of a JSON value with `leaf` applied to every value that is neither an object
    nor a list (keys are kept). Iterative: safe on a value nested as deep as any decoder
    allowed."""
    if not isinstance(value, dict | list):
        return leaf(value)
    root: dict[str, Any] | list[Any] = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            if isinstance(item, dict | list):
                copy: Any = {} if isinstance(item, dict) else []
                stack.append((item, copy))
            else:
                copy = leaf(item)
            if isinstance(target, dict):
                target[key] = copy
            else:
                target.append(copy)
    return root


def check_depth(value: Any, limit: int = MAX_DEPTH) -> Any:
    """`value` itself, or `JSONDepthError` when it nests deeper than `limit`."""
    if depth_exceeds(value, limit):
        raise JSONDepthError(limit)
    return value


def loads(text: str | bytes, limit: int = MAX_DEPTH) -> Any:
    """`json.loads` that fails with `JSONDepthError` (never `RecursionError`) on deep
    nesting; other bad JSON raises `json.JSONDecodeError` as usual."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise JSONDepthError(limit) from None
    return check_depth(value, limit)


def loads_or_text(text: str) -> Any:
    """`text` decoded as JSON, or `text` itself when it does not decode: bad syntax, or
    nesting beyond what Python's decoder can follow. For a model's tool-call arguments,
    which the tool then answers with an error the model can react to."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with control characters (ESC sequences, NUL, bidi overrides...) shown as
    `\\xNN`/`\\uNNNN` escapes; newlines and tabs are kept."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
