"""Checks of values a user gives that several layers share: the run config, a model's
config, the gym and the harness commands each refuse the same values in the same words.

A refused address is echoed only as `shown` makes it: a mistyped one may carry a
password or a token (`http://user:PASS@host`, `?key=...`), and a pasted one may be huge
or hold control characters."""

from __future__ import annotations

import re
import urllib.parse

from tau_adapters.options import MAX_SECONDS
from tau_adapters.redaction import MASK, redact_text, truncate

MAX_TIMEOUT = MAX_SECONDS
"""Seconds of the longest deadline a user may set, the adapters' bound too: a deadline of
a year is no deadline."""

MAX_URL_LENGTH = 2048
"""Characters of a model endpoint's URL; longer is a paste gone wrong."""

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")

SHOWN_LENGTH = 200
"""Characters of a refused address an error echoes: one readable line, whatever was given."""


def shown(address: str) -> str:
    """`address` as an error may echo it (quoted, escaped): a userinfo's password (all of a
    userinfo without one: it may be a token), the query and the fragment masked, known
    secret shapes masked too (`redact_text`), then cut to `SHOWN_LENGTH` characters."""
    scheme = _SCHEME.match(address)
    prefix = scheme.group() if scheme else ""
    rest = address[len(prefix) :]
    head, tail = rest, ""
    for i, c in enumerate(rest):
        if c in "?#":  # an address has neither: all of what follows may be secret
            head, tail = rest[:i], c + MASK
            break
    userinfo, at, host = head.rpartition("@")
    if at:
        name, colon, _password = userinfo.partition(":")
        userinfo = f"{name}:{MASK}" if colon else MASK
    masked = f"{prefix}{userinfo}{at}{host}{tail}"
    return repr(truncate(redact_text(masked), SHOWN_LENGTH))


def check_endpoint_url(value: str | None) -> str | None:
    """`value` when it is an http(s) URL with a host, the form every model endpoint
    (`api_base`) takes; else a ValueError that echoes it only as `shown` does (an endpoint's
    URL may carry a key). Caught here, a typo is one line before anything runs, not a
    pre-flight's connection error after its retries."""
    if value is None:
        return None
    if len(value) > MAX_URL_LENGTH:
        raise ValueError(f"more than {MAX_URL_LENGTH} characters: not an endpoint's URL")
    if any(c.isspace() or not c.isprintable() for c in value):
        raise ValueError(f"a URL has no spaces or control characters: {shown(value)}")
    example = "an http(s) URL such as http://localhost:8000/v1"
    try:
        parts = urllib.parse.urlsplit(value)
        _ = parts.port  # raises on a port that is no number
    except ValueError:
        raise ValueError(f"expected {example}, not {shown(value)}") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(f"expected {example}, not {shown(value)}")
    return value
