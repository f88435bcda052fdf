"""The text space of the gym: any Unicode string up to `MAX_TEXT_LENGTH` characters.

gymnasium's `Text` only contains strings drawn from its charset (alphanumerics by
default); conversations are JSON, punctuation and any script. `ConversationText`
keeps `Text`'s interface (sampling from a printable ASCII charset, so the env checker
and random agents work) but contains every string within the length bounds.
"""

from __future__ import annotations

import string
from typing import Any

from gymnasium import spaces

# A tool result can be a long JSON list (flight searches, order histories): 2**20
# characters is far above anything the domains return, and observations longer than
# that are cut (the info says so) rather than leaving the space.
MAX_TEXT_LENGTH = 2**20
SAMPLE_CHARSET = string.ascii_letters + string.digits + " .,'"


class ConversationText(spaces.Text):
    """`Text(min_length=0, max_length=MAX_TEXT_LENGTH)` that contains any Unicode string."""

    def __init__(self, max_length: int = MAX_TEXT_LENGTH, seed: Any = None) -> None:
        super().__init__(max_length, min_length=0, charset=SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"ConversationText(0, {self.max_length})"
