"""The cycle collector's pace while episodes run: fewer, larger young collections.

Episodes allocate a great many short-lived containers (messages, JSON, HTTP objects).
At CPython's default pace (a young collection every 700 net allocations) a long run on
the direct path spent ~0.27 ms of CPU per model call in the collector, 15-18 % of it
(docs/performance.md): it kept traversing objects reference counting frees a moment
later, promoted in-flight episodes' objects to the old generations, and so ran full
collections over every stored record. A young collection every `YOUNG_THRESHOLD`
allocations leaves ~0.02 ms. Cycles are still collected, a little later: at most
`YOUNG_THRESHOLD` more tracked objects wait (a few MB). Nothing else changes.

Process-wide, so it is held for as long as some run in the process runs (concurrent
runs in one process, e.g. `tau serve`, share it) and the caller's pace comes back after.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

YOUNG_THRESHOLD = 50_000
"""Net allocations of tracked objects between two young collections during runs."""

_lock = threading.Lock()
_holders = 0
_before: tuple[int, ...] | None = None


def _enter() -> None:
    global _holders, _before
    with _lock:
        if _holders == 0:
            _before = gc.get_threshold()
            gc.set_threshold(max(_before[0], YOUNG_THRESHOLD), *_before[1:])
        _holders += 1


def _exit() -> None:
    global _holders, _before
    with _lock:
        _holders -= 1
        if _holders == 0 and _before is not None:
            gc.set_threshold(*_before)
            _before = None


@contextlib.contextmanager
def run_pace() -> Iterator[None]:
    """Young collections every `YOUNG_THRESHOLD` allocations while the block runs (or
    the caller's own threshold, if higher); the caller's thresholds after the last
    holder leaves."""
    _enter()
    try:
        yield
    finally:
        _exit()
