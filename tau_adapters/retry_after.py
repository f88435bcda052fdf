"""Seconds to wait from an HTTP `Retry-After` value, for every client that honours one.

Why one copy: the HTTP adapter, the A2A adapter and the LLM layer all back off on 429/503,
and a value a server got wrong (`soon`, `nan`, `inf`, a date without a zone, a date
Python cannot represent) must mean the same thing everywhere: the caller's own backoff.
"""

from __future__ import annotations

import datetime
import email.utils
import math
import re
import time

__all__ = ["parse_retry_after"]

_SECONDS = re.compile(r"[+-]?[0-9]+(?:\.[0-9]*)?")
"""Delta-seconds as servers write them (a fraction and a sign tolerated). Not `float()`'s
whole grammar: `1e3`, `5_0` and non-ASCII digits (`١٢`) are wrong values, not 1000 s,
50 s and 12 s."""


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait (delta-seconds or an HTTP date, never negative); None when absent
    or unreadable, so the caller's own backoff applies."""
    if not value:
        return None
    value = value.strip()
    if _SECONDS.fullmatch(value):
        seconds = float(value)
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:  # RFC 850 / asctime forms: HTTP dates are GMT
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, when.timestamp() - time.time())
