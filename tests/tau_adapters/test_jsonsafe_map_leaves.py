"""`jsonsafe.map_leaves`: one iterative copy of a JSON value (the readers mask strings
with it, the τ³ export spells non-finite numbers), safe at any depth."""

from __future__ import annotations

from tau_adapters.jsonsafe import map_leaves


def test_leaves_are_mapped_and_keys_and_order_kept() -> None:
    value = {"a": ["x", 1, {"b": "y"}], "c": None}
    got = map_leaves(value, lambda v: v.upper() if isinstance(v, str) else v)
    assert got == {"a": ["X", 1, {"b": "Y"}], "c": None}
    assert value == {"a": ["x", 1, {"b": "y"}], "c": None}  # a copy
    assert map_leaves("z", str.upper) == "Z"


def test_a_value_nested_100_000_deep_is_copied_without_recursion() -> None:
    deep: list = []
    inner = deep
    for _ in range(100_000):
        inner.append([])
        inner = inner[0]
    inner.append("s")
    copy = map_leaves(deep, lambda v: v * 2)
    for _ in range(100_000):
        copy = copy[0]
    assert copy == ["ss"]
