"""The one way the product makes a rich `Console`: with markup off.

What reaches the terminal is mostly data: task ids (τ³ telecom's read
"[mobile_data_issue]...[PERSONA:Easy]"), run labels taken from file names, error texts
("[type=missing, ...]"), agents' and bots' words. With rich markup on, "[word]" in them
is taken for a style and silently dropped, and "[/word]" raises. So every string printed
is plain text, and styles come from `rich.text.Text` and `style=` arguments instead.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text


def console(**options: Any) -> Console:
    """A `Console(**options)` that prints every string as it is (markup off)."""
    return Console(markup=False, **options)


def styled(text: str, style: str) -> Text:
    """`text` in `style`, the text taken literally."""
    return Text(text, style=style)
