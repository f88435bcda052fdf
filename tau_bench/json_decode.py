"""JSON decoding for the hot paths (log lines, model-call bodies of the fake server).

With orjson these decode ~1.6 times faster than with the standard library (the record
lines of `make demo`, the check below included), which matters where one process decodes
every record of a cluster (the Ray driver). Its grammar differs, though:
it rejects NaN and Infinity (which `json.dumps` writes) and turns integers beyond 64 bits
into floats. Documents with either go to the standard library, so what is accepted and
what it decodes to stay exactly `json.loads`'s. So do documents nested deeper than
orjson's limit (1,024 levels), which the standard library cannot follow either: where it
gives up with a `RecursionError`, `loads` raises `JSONTooDeepError`, a `JSONDecodeError`
like any other document that does not decode, so a reader that skips or reports a bad
line does so for this one too. Likewise an integer longer than Python converts
(`sys.get_int_max_str_digits()`, 4,300 digits by default), where `json.loads` raises a
plain `ValueError`: `loads` raises `JSONIntegerTooLongError`, a `JSONDecodeError` at the
first such run of digits. `stdlib_loads` is `json.loads` with only that change, for
readers that keep the standard library's decoder.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import orjson

from tau_adapters.jsonsafe import JSONDepthError

__all__ = ["JSONIntegerTooLongError", "JSONTooDeepError", "loads", "stdlib_loads"]


class JSONTooDeepError(json.JSONDecodeError, JSONDepthError):
    """A document nested deeper than Python's decoder can follow (it would raise
    `RecursionError`): both a `json.JSONDecodeError` and a `JSONDepthError`."""

    def __init__(self, doc: str) -> None:
        json.JSONDecodeError.__init__(self, "JSON nested too deep to decode", doc, 0)
        self.args = (self.msg,)  # no position: the whole document is refused
        self.limit = sys.getrecursionlimit()


class JSONIntegerTooLongError(json.JSONDecodeError):
    """An integer with more digits than Python converts from text (the standard library's
    decoder raises a plain `ValueError`): a `json.JSONDecodeError` like any other
    document that does not decode."""

    def __init__(self, doc: str) -> None:
        limit = sys.get_int_max_str_digits()
        json.JSONDecodeError.__init__(
            self, f"integer longer than {limit:,} digits", doc, _long_integer_at(doc, limit)
        )
        self.limit = limit


def _long_integer_at(doc: str, limit: int) -> int:
    """Where the first run of more than `limit` digits that looks like an integer (not
    part of a float, not right inside quotes) starts; 0 if none does."""
    if limit <= 0:
        return 0
    run = re.search(rf'(?<![\d.eE+"-])-?\d{{{limit + 1},}}(?![\d.eE"])', doc)
    return run.start() if run else 0


def stdlib_loads(text: str | bytes) -> Any:
    """`json.loads(text)`, except that an integer too long to convert is a
    `JSONIntegerTooLongError` (a `json.JSONDecodeError`), not a plain `ValueError`."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise
    except ValueError:  # the only other one: an integer beyond sys.get_int_max_str_digits()
        raise JSONIntegerTooLongError(_text(text)) from None


def _text(data: str | bytes) -> str:
    if isinstance(data, str):
        return data
    return data.decode(json.detect_encoding(data), "replace")


# Every ASCII digit mapped to "0": a run of 19 zeros after the mapping is a run of 19
# digits, the shortest integer orjson may not keep exact (below -2**63 or above 2**64-1).
# One C pass; a false alarm (a long digit string, a float's long fraction: ~1 record line
# in 8) only costs the slower decode.
_DIGITS_TO_ZERO = bytes(0x30 if 0x30 <= b <= 0x39 else b for b in range(256))
_LONG_NUMBER = b"0" * 19


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """`json.loads(data)`, decoded by orjson where that is exact; raises
    `json.JSONDecodeError` (`UnicodeDecodeError` for bytes not UTF-8) for what is not JSON,
    `JSONTooDeepError` (never `RecursionError`) for what is nested too deep to decode and
    `JSONIntegerTooLongError` (never a plain `ValueError`) for an integer too long to
    convert."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if raw.translate(_DIGITS_TO_ZERO).find(_LONG_NUMBER) < 0:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # not JSON, or NaN/Infinity: the standard library says which
    try:
        return stdlib_loads(data if isinstance(data, str) else raw)
    except RecursionError:
        raise JSONTooDeepError(_text(data if isinstance(data, str) else raw)) from None
