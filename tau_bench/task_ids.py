"""Task ids as results files carry them: plain indices, or `"domain/N"` in multi-domain runs.

A single-domain run names its tasks by index (`12`); a multi-domain run (`tau run --env
retail,airline`) by `"retail/12"`. Analyses mix the two (a retail run next to a
two-domain run), so ids are sorted by (domain, index) and never compared across kinds,
and turned into file-name parts (`retail-12`) where a `/` cannot go.

An index has at most `MAX_INDEX_DIGITS` digits (every index fits in 64 bits): a longer
one is no task's, and Python would not even convert one of over 4,300 digits. Reading an
id (`parse_task_id`, `expand_task_ids`) refuses it with a `ValueError`; the helpers that
look at ids already read (`task_index`, `task_domain`, `sort_key`) treat `"retail/<more
digits>"` as other text, never raising.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

TaskId = int | str

MAX_INDEX_DIGITS = 18
"""Most digits a task index may have (10**18 - 1 fits in 64 bits)."""

# The domain part may itself hold a suite prefix: "tau3/retail/12".
_DOMAIN = r"[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*"
_NAMESPACED = re.compile(rf"^\s*({_DOMAIN})\s*/\s*(-?\d{{1,{MAX_INDEX_DIGITS}}})\s*$")
# An index too long to be one: plain or namespaced.
_TOO_LONG = re.compile(rf"^\s*(?:{_DOMAIN}\s*/\s*)?-?\d{{{MAX_INDEX_DIGITS + 1},}}\s*$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def parse_task_id(value: Any) -> TaskId:
    """A task id read from a file: an integer (also from `"12"` or `12.0`), `"domain/N"`
    normalised (`"retail/07"` -> `"retail/7"`), or any other non-empty text as it is.
    ValueError for anything else (a bool, a fraction, null, an empty string)."""
    if isinstance(value, bool):
        raise ValueError(f"task id must be an integer or DOMAIN/N, got {value!r}")
    if isinstance(value, int):
        return _index(value)
    if isinstance(value, float) and value.is_integer():
        return _index(int(value))
    if isinstance(value, str):
        text = value.strip()
        if _TOO_LONG.match(text):
            raise _too_long(text)
        if text.lstrip("-").isascii() and text.lstrip("-").isdigit():  # not "²"
            return int(text)
        match = _NAMESPACED.match(text)
        if match:
            return f"{match[1]}/{int(match[2])}"
        if text:
            return text
    raise ValueError(f"task id must be an integer or DOMAIN/N, got {value!r}")


def _index(value: int) -> int:
    if abs(value) >= 10**MAX_INDEX_DIGITS:  # not printed: it may be too long to convert
        raise ValueError(f"task id has more than {MAX_INDEX_DIGITS} digits (no task has)")
    return value


def _too_long(text: str, what: str = "task id") -> ValueError:
    shown = text if len(text) <= 40 else f"{text[:30]}…"
    return ValueError(
        f"{what} {shown!r} has an index of more than {MAX_INDEX_DIGITS} digits (no task has)"
    )


def parse_run_task_id(value: Any) -> TaskId:
    """A task id a user selects (`--task-ids`, YAML, the API): an integer or `DOMAIN/N`.

    Stricter than `parse_task_id` (which reads ids from files): free text is refused.
    """
    parsed = parse_task_id(value)
    if isinstance(parsed, str) and task_domain(parsed) is None:
        raise ValueError(f"task id must be an integer or DOMAIN/ID, got {value!r}")
    if isinstance(value, float):
        raise ValueError(f"task id must be an integer or DOMAIN/ID, got {value!r}")
    return parsed


# `0-4`, `retail/9-12`: a range of indices, both ends included.
_RANGE = re.compile(r"^\s*(?:([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*)\s*/\s*)?(\d+)\s*-\s*(\d+)\s*$")
# A range longer than any split: refused rather than expanded (a typo, or a request
# that would make the server list a billion ids).
MAX_RANGE = 10_000


def expand_task_ids(value: Any) -> list[TaskId]:
    """Task ids a user selects, ranges expanded: `"0-4 7 9-12"` -> `[0, 1, 2, 3, 4, 7, 9, ...]`.

    `value` is one id (`7`, `"retail/7"`), one range (`"0-4"`, `"retail/9-12"`, both ends
    included), or a string of them separated by spaces or commas. Order is kept, repeats
    are not removed (the caller decides). ValueError for anything else.
    """
    if not isinstance(value, str):
        return [parse_run_task_id(value)]
    parts = value.replace(",", " ").split()
    if not parts:
        raise ValueError(f"task id must be an integer or DOMAIN/ID, got {value!r}")
    out: list[TaskId] = []
    for part in parts:
        match = _RANGE.match(part)
        if match is None:
            out.append(parse_run_task_id(part))
            continue
        if max(len(match[2]), len(match[3])) > MAX_INDEX_DIGITS:
            raise _too_long(part, "task range")
        domain, first, last = match[1], int(match[2]), int(match[3])
        if last < first:
            raise ValueError(f"task range {part!r} ends before it starts")
        if last - first >= MAX_RANGE:
            raise ValueError(f"task range {part!r} is longer than {MAX_RANGE} tasks")
        out.extend(f"{domain}/{i}" if domain else i for i in range(first, last + 1))
    return out


def task_domain(task_id: TaskId) -> str | None:
    """`"retail"` for `"retail/12"`; None for a plain index."""
    if isinstance(task_id, str):
        match = _NAMESPACED.match(task_id)
        if match:
            return match[1]
    return None


def task_index(task_id: TaskId) -> int | None:
    """The index within its domain: `12` for `12` and for `"retail/12"`; None otherwise."""
    if isinstance(task_id, int):
        return task_id
    match = _NAMESPACED.match(task_id)
    return int(match[2]) if match else None


def qualify(task_id: TaskId, domain: str) -> TaskId:
    """A plain index as `"domain/N"` (ids that already name a domain are kept)."""
    return f"{domain}/{task_id}" if isinstance(task_id, int) else task_id


def sort_key(task_id: TaskId) -> tuple[str, int, int, str]:
    """A total order over ids of every kind: by domain ("" for plain indices), then by
    index as a number (`retail/2` before `retail/10`), then other text."""
    domain = task_domain(task_id)
    index = task_index(task_id)
    if index is not None:
        return (domain or "", 0, index, "")
    return (domain or "", 1, 0, str(task_id))


def sorted_ids(ids: Iterable[TaskId]) -> list[TaskId]:
    return sorted(set(ids), key=sort_key)


def file_part(task_id: TaskId) -> str:
    """The id as part of a file name: `retail/12` -> `retail-12`, `12` -> `12`."""
    if isinstance(task_id, int):
        return str(task_id)
    cleaned = _UNSAFE.sub("_", task_id.replace("/", "-")).strip("._-")
    return cleaned or "task"


def ids_text(ids: Iterable[TaskId], limit: int = 12) -> str:
    """`0-4, 7, retail/9-12` (first `limit` ranges), for messages about task sets:
    consecutive indices of one domain become a range."""
    ordered = sorted_ids(ids)
    ranges: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and _follows(ordered[j], ordered[j + 1]):
            j += 1
        if i == j:
            ranges.append(str(ordered[i]))
        else:
            last = task_index(ordered[j])
            ranges.append(f"{ordered[i]}-{last}")
        i = j + 1
    more = len(ranges) - limit
    return ", ".join(ranges[:limit]) + (f", … ({more} more)" if more > 0 else "")


def _follows(a: TaskId, b: TaskId) -> bool:
    ia, ib = task_index(a), task_index(b)
    return ia is not None and ib is not None and ib == ia + 1 and task_domain(a) == task_domain(b)
