"""The benchmark's database-state hash, bit-for-bit as the original computed it.

hash(db) = sha256(utf8(str(to_hashable(db)))). `to_hashable` turns dicts into tuples of
(key, value) pairs sorted by key, lists into tuples and sets into sorted tuples; `str` of
the result is CPython's tuple repr. We run on CPython, so building the same tuples and
calling `repr` gives exactly the original bytes; `hash_examples.json` in the dataset pins it.
"""

from __future__ import annotations

import hashlib
from typing import Any


def to_hashable(value: Any) -> Any:
    """Nested dicts/lists/sets -> nested tuples, dict keys sorted (spec §5).

    Exact-type checks and list comprehensions: this runs over every record once per
    process, so it is written for speed. JSON data holds no dict/list subclasses.
    """
    t = type(value)
    if t is dict:
        return tuple([(k, to_hashable(value[k])) for k in sorted(value)])
    if t is list:
        return tuple([to_hashable(v) for v in value])
    if t is set:
        return tuple(sorted([to_hashable(v) for v in value]))
    if isinstance(value, dict):
        return tuple([(k, to_hashable(value[k])) for k in sorted(value)])
    if isinstance(value, list | tuple):
        return tuple([to_hashable(v) for v in value])
    if isinstance(value, set | frozenset):
        return tuple(sorted([to_hashable(v) for v in value]))
    return value


def copy_json(value: Any) -> Any:
    """Deep copy of JSON-shaped data (dicts, lists, scalars), faster than copy.deepcopy."""
    t = type(value)
    if t is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if t is list:
        return [copy_json(v) for v in value]
    if t in (str, int, float, bool) or value is None:
        return value
    import copy

    return copy.deepcopy(value)


def hashable_repr(value: Any) -> str:
    """The exact text the original hashed for `value`."""
    return repr(to_hashable(value))


def consistent_hash(value: Any) -> str:
    """sha256 hex digest of `hashable_repr(value)`; the generic, uncached path."""
    return hashlib.sha256(hashable_repr(value).encode("utf-8")).hexdigest()
