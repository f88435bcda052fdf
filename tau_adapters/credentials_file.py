"""A Google credentials file read as a bounded JSON object, for the adapters that take one
(Dialogflow CX, CES).

Why: such a file is a few KiB; anything huge, not JSON or not an object is refused in one
line naming the file before google.auth sees it, and no message quotes the file's
content (it may hold key material).
"""

from __future__ import annotations

import json
from typing import Any

from tau_adapters.jsonsafe import printable
from tau_adapters.protocol import AdapterConfigError

__all__ = ["MAX_CREDENTIALS_BYTES", "read_credentials_json"]

MAX_CREDENTIALS_BYTES = 1 << 20


def read_credentials_json(path: str, label: str) -> dict[str, Any]:
    """The file's JSON object; `AdapterConfigError` (messages start with `label`)."""
    shown = printable(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CREDENTIALS_BYTES + 1)
    except OSError as exc:
        raise AdapterConfigError(
            f"{label}: cannot read the credentials file {shown} ({type(exc).__name__})"
        ) from None
    unusable = f"{label}: {shown} is not a usable Google credentials file"
    if len(data) > MAX_CREDENTIALS_BYTES:
        raise AdapterConfigError(f"{unusable} (larger than {MAX_CREDENTIALS_BYTES >> 20} MiB)")
    try:
        info = json.loads(data)
    except (ValueError, RecursionError):
        raise AdapterConfigError(f"{unusable} (not JSON)") from None
    if not isinstance(info, dict):
        raise AdapterConfigError(f"{unusable} (a JSON {type(info).__name__}, expected an object)")
    return info
