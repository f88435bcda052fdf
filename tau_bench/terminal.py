"""The one way the product makes a rich `Console`: markup off, control characters shown.

What reaches the terminal is mostly data: task ids (τ³ telecom's read
"[mobile_data_issue]...[PERSONA:Easy]"), run labels taken from file names, error texts
("[type=missing, ...]"), agents' and bots' words. With rich markup on, "[word]" in them
is taken for a style and silently dropped, and "[/word]" raises. With emoji codes on, a
level "20:100:4000" or a bot's ":smile:" turns into a picture. So every string printed is
plain text, and styles come from `rich.text.Text` and `style=` arguments instead.

A hosted agent, a tool or a results file from elsewhere may also hold bytes a terminal
obeys: an escape sequence that clears the screen or writes the clipboard (OSC 52), a C1
control, a bidi override that reorders what is shown. Rich passes them through. This
console shows each one as a visible symbol instead (one character for one, so the
layout and the styles' spans stay right): ␛ for ESC, ␇ for BEL, � for the others.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

# C0 but tab and newline, DEL, C1, line/paragraph separators, bidi embeddings/overrides
# and isolates: what `tau_adapters.jsonsafe.printable` escapes in records.
_OBEYED = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _symbol(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Unicode "control pictures": ␀ … ␟
    return "\u2421" if code == 0x7F else "\ufffd"


def displayable(text: str) -> str:
    """`text` with every character a terminal would obey replaced by a visible symbol,
    one for one; newlines and tabs are kept."""
    return _OBEYED.sub(_symbol, text)


class _DataConsole(Console):
    """A `Console` whose strings and `Text`s are shown, never obeyed."""

    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(displayable(text), **options)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        if isinstance(renderable, Text) and _OBEYED.search(renderable.plain):
            renderable = renderable.copy()
            renderable.plain = displayable(renderable.plain)  # same length: spans hold
        return super().render(renderable, options)


def console(**options: Any) -> Console:
    """A `Console(**options)` that prints every string as it is (markup and emoji codes
    off) and shows the control characters in it instead of obeying them."""
    return _DataConsole(markup=False, emoji=False, **options)


def styled(text: str, style: str) -> Text:
    """`text` in `style`, the text taken literally and its control characters shown.

    A table measures a `Text` cell before this console renders it; strings are measured
    through `render_str`, so both keep their width."""
    return Text(displayable(text), style=style)
