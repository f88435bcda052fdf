"""Building blocks of the fake model's plans: writes with the reads that lead to them,
assembled into a sequence of the requested length."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

Call = dict[str, Any]


def call(name: str, **kwargs: Any) -> Call:
    return {"name": name, "kwargs": kwargs}


@dataclass
class Write:
    """One database change, the reads an agent makes just before it, and after it."""

    key: str  # writes with the same key (order, reservation) are not combined
    summary: str
    action: Call
    before: list[Call] = field(default_factory=list)
    after: list[Call] = field(default_factory=list)


def pick_writes(candidates: list[Write], count: int, rng: random.Random) -> list[Write]:
    rng.shuffle(candidates)
    chosen: list[Write] = []
    keys: set[str] = set()
    for write in candidates:
        if write.key not in keys:
            chosen.append(write)
            keys.add(write.key)
        if len(chosen) == count:
            break
    return chosen


def write_count(high: int, rng: random.Random) -> int:
    return rng.randint(1, max(1, min(3, high // 2)))


def assemble(
    first: list[Call],
    writes: list[Write],
    extra: list[Call],
    low: int,
    high: int,
    rng: random.Random,
) -> list[Call]:
    """`first` reads, then each write with its reads, then `extra` reads, keeping as many
    reads (by priority: first, before/after, extra) as make a length in [low, high]."""
    entries: list[tuple[Call, int]] = [(c, 1) for c in first]
    for write in writes:
        entries += [(c, 2) for c in write.before]
        entries.append((write.action, 0))
        entries += [(c, 2) for c in write.after]
    entries += [(c, 3 + i) for i, c in enumerate(extra)]
    reads = sorted(
        (i for i, (_, prio) in enumerate(entries) if prio > 0), key=lambda i: (entries[i][1], i)
    )
    target = rng.randint(max(low, len(writes)), max(low, high, len(writes)))
    keep = set(reads[: max(0, target - len(writes))])
    seen: set[str] = set()
    out: list[Call] = []
    for i, (action, prio) in enumerate(entries):
        if prio == 0 or i in keep:
            marker = repr(action)
            if prio > 0 and marker in seen:
                continue
            seen.add(marker)
            out.append(action)
    return out


def describe_method(method: dict[str, Any]) -> str:
    source = method.get("source")
    if source == "credit_card":
        return (
            f"{str(method.get('brand', 'credit')).title()} card ending in {method.get('last_four')}"
        )
    if source == "gift_card":
        return "gift card"
    if source == "paypal":
        return "PayPal account"
    if source == "certificate":
        return f"travel certificate of ${method.get('amount')}"
    return "usual payment method"
