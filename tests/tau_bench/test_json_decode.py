"""`json_decode.loads` accepts exactly what `json.loads` accepts, and decodes it the same."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tau_bench.json_decode import loads

documents = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@given(documents)
def test_decodes_what_json_dumps_writes_as_json_loads_does(doc: object) -> None:
    for text in (json.dumps(doc), json.dumps(doc, ensure_ascii=False)):
        assert _same(loads(text.encode("utf-8")), json.loads(text))
        assert _same(loads(text), json.loads(text))


def test_the_standard_library_grammar_beyond_orjson_still_decodes() -> None:
    assert math.isnan(loads(b'{"reward": NaN}')["reward"])
    assert loads(b"[Infinity, -Infinity]") == [math.inf, -math.inf]
    assert loads(b"123456789012345678901234567890") == 123456789012345678901234567890
    assert loads(b"[-9223372036854775809, 18446744073709551616]") == [-(2**63) - 1, 2**64]
    assert loads(bytearray(b"[1e400]")) == [math.inf] and loads(memoryview(b"[1]")) == [1]
    assert loads('"\\ud800"') == "\ud800"  # a lone surrogate, as json.dumps writes it


@pytest.mark.parametrize("bad", [b"", b"{", b'{"a": 1', b"nul", b"[1,]"])
def test_what_is_not_json_raises_the_standard_error(bad: bytes) -> None:
    with pytest.raises(json.JSONDecodeError):
        loads(bad)
