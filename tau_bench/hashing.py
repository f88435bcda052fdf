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
    """Nested dicts/lists/sets -> nested tuples, dict keys sorted (spec §5)."""
    if isinstance(value, dict):
        return tuple((k, to_hashable(v)) for k, v in sorted(value.items()))
    if isinstance(value, list):
        return tuple(to_hashable(v) for v in value)
    if isinstance(value, set):
        return tuple(sorted(to_hashable(v) for v in value))
    return value


def hashable_repr(value: Any) -> str:
    """The exact text the original hashed for `value`."""
    return repr(to_hashable(value))


def consistent_hash(value: Any) -> str:
    """sha256 hex digest of `hashable_repr(value)`; the generic, uncached path."""
    return hashlib.sha256(hashable_repr(value).encode("utf-8")).hexdigest()
