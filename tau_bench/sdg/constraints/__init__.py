"""Data and policy constraints on a proposed action, checked against the episode's DB.

The domain tools check little (they cancel another user's order, or a reservation twice,
without complaint), so the generator does not trust the model: before each action runs
in the sandbox, these checks read the *current* episode state (so an action may refer to
a reservation an earlier action booked) and report ids that do not exist or are not the
sampled user's, unavailable flights or items, and the policy rules an agent following
the domain policy would refuse to break. Read-only tools are checked too: a task should
not look up another customer's data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tau_bench.db import EpisodeDB
from tau_bench.sdg.problems import Problem

Finding = tuple[str, str]  # (reason, message)
Check = Callable[[EpisodeDB, str, Mapping[str, Any]], list[Finding]]


def _checks(env: str) -> Mapping[str, Check]:
    """The checks of an `--env`: v1's domains, and τ³'s (its airline policy differs)."""
    if env in ("airline", "tau3/airline"):
        from tau_bench.sdg.constraints import airline

        return airline.TAU3_CHECKS if env == "tau3/airline" else airline.CHECKS
    if env in ("retail", "tau3/retail"):
        from tau_bench.sdg.constraints import retail

        return retail.CHECKS
    return {}


def check_action(
    env: str, db: EpisodeDB, user_id: str, index: int, name: str, kwargs: Mapping[str, Any]
) -> list[Problem]:
    """Constraint problems of running `name(**kwargs)` for `user_id` on `db` now
    (`env`: the `--env` name, e.g. `retail` or `tau3/retail`)."""
    check = _checks(env).get(name)
    if check is None:
        return []
    return [
        Problem(reason, f"{name}: {message}", index)
        for reason, message in check(db, user_id, kwargs)
    ]
