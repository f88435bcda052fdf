"""Tool results → tool-message content, exactly as the original (spec §2.4).

Strings pass through unchanged. Anything else is converted and `json.dumps`-ed with the
defaults (`ensure_ascii`, `", "`/`": "`, insertion order) and `default=str`:

* a pydantic model → its python-mode `model_dump()`, not processed further (numbers stay
  numbers, dates render via `str()` with a space);
* `Dumped(value)` → `value` as is: how table-DB tools return a record that the original
  held as a model (records already hold `model_dump()`'s values);
* dict/list/tuple → converted element-wise; `None` → null;
* int/float/bool OUTSIDE a model → `str(value)` (so `{"charge": 4.0}` → `{"charge": "4.0"}`);
* date/datetime outside a model → ISO format.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import Any

from pydantic import BaseModel

__all__ = ["Dumped", "to_content"]


class Dumped:
    """Marks a value as a model dump: serialised without the number-to-string rule."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"Dumped({self.value!r})"


def _convert(value: Any) -> Any:
    if isinstance(value, Dumped):
        return value.value
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, int | float | bool):
        return str(value)
    if isinstance(value, list):
        return [_convert(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_convert(v) for v in value)
    if isinstance(value, dict):
        return {k: _convert(v) for k, v in value.items()}
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise ValueError(f"Unsupported type: {type(value)}")


def to_content(result: Any) -> str:
    """The tool message content for a tool's return value."""
    if isinstance(result, str):
        return str.__str__(result)  # a str-enum member becomes its value
    return json.dumps(_convert(result), default=str)
