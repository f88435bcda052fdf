"""Which tasks a `TauBench-v0` reset may play: one domain, or several at once.

`domain="tau3/retail,tau3/telecom"` (or a list) mixes domains in one environment, as
`tau run --env a,b` does: a reset without a `task_id` draws uniformly from every task of
every domain (or from `task_ids`), and task ids are namespaced, `"tau3/retail/3"`, as in
multi-domain results files. With one domain, ids stay plain indices.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tau_bench.task_ids import parse_task_id

Ref = tuple[str, int]
"""(domain name as given, task index in that domain's split)."""


def domain_list(domain: str | Sequence[str]) -> list[str]:
    """The domains a gym plays, in order, without repeats; ValueError when none."""
    parts = domain.split(",") if isinstance(domain, str) else list(domain)
    names = list(dict.fromkeys(str(p).strip() for p in parts if str(p).strip()))
    if not names:
        raise ValueError("domain must name at least one domain")
    return names


def parse_ref(
    value: Any, domains: Sequence[str], default: str | None = None, *, hint: str = ""
) -> Ref:
    """A task id as a reset or `task_ids` names it: an index into `default` (the only
    domain, or the reset's `domain` option) or a namespaced `"domain/N"` whose domain is
    one of `domains` (ValueError otherwise: a task of another domain, or of the other
    suite, is never played in its place or silently left out; `hint` ends that error)."""
    task_id = parse_task_id(value)
    if isinstance(task_id, int):
        if default is None:
            raise ValueError(
                f"task id {value!r} is ambiguous with several domains: "
                f"name it DOMAIN/N (one of {', '.join(domains)})"
            )
        return default, task_id
    name, _, index = task_id.rpartition("/")
    if not name or not index.lstrip("-").isdigit():
        raise ValueError(f"task id must be an integer or DOMAIN/N, got {value!r}")
    if name not in domains:
        raise ValueError(
            f"task id {value!r} names domain {name!r}, which is not played here "
            f"(domains: {', '.join(domains)}){hint}"
        )
    return name, int(index)


def label(ref: Ref, mixed: bool) -> int | str:
    """The task id an `info` dict carries: namespaced when the gym mixes domains."""
    return f"{ref[0]}/{ref[1]}" if mixed else ref[1]
