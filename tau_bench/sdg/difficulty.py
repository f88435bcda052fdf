"""Difficulty levels of generated tasks: how many ground-truth actions a task has.

The count is over *all* actions, read-only ones included (as the issue defines it, and
as the shipped tasks count them): easy = 1, medium = 2-5, hard = 6-10. An easy task is
therefore a single write.
"""

from __future__ import annotations

from enum import StrEnum


class Difficulty(StrEnum):
    easy = "easy"
    medium = "medium"
    hard = "hard"

    @property
    def bounds(self) -> tuple[int, int]:
        """The inclusive range of action counts of this difficulty."""
        return RANGES[self]

    def accepts(self, count: int) -> bool:
        low, high = self.bounds
        return low <= count <= high

    def describe(self) -> str:
        low, high = self.bounds
        return f"exactly {low} action" if low == high else f"{low} to {high} actions"


RANGES: dict[Difficulty, tuple[int, int]] = {
    Difficulty.easy: (1, 1),
    Difficulty.medium: (2, 5),
    Difficulty.hard: (6, 10),
}


def difficulty_of(count: int) -> Difficulty | None:
    """The difficulty whose range holds `count` actions (None: 0 or more than 10)."""
    for level in Difficulty:
        if level.accepts(count):
            return level
    return None
