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


def nodes_exceed(value: Any, limit: int) -> bool:
    """Whether a decoded value has more than `limit` values counted as a tree, each
    repeat of a shared one (a YAML alias) counted again: what any walk over it costs.
    Stops counting at `limit`, so a billion-laughs document is cheap to refuse, and so is
    one that contains itself."""
    count = 0
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        count += 1
        if count > limit:
            return True
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


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
