"""One cost record per episode, split into agent, user, judge and platform; unknown is
None (shown as "unknown"), never $0.

* agent: the agent model's cost as litellm priced it. 0 for an agent that calls no
  model (`oracle`), unless its usage reports a cost. Unknown for a hosted agent (HTTP, Dialogflow CX...: its own model
  spend is not reported to us) and for a local model litellm has no price for.
* user: the user simulator's model cost; 0 for `scripted`/`human` and when no call was
  made; unknown when calls were made but not priced.
* judge: the τ³ judge's model cost (`judge_usage` of the record); 0 when the episode
  had no judge; unknown when its calls were not priced.
* platform: `--platform-price-per-request` (USD) × the agent requests of the episode
  for a hosted agent; unknown without a price; 0 for a local agent.

The total is unknown as soon as one part is; the known part is still given
(`known`). Cost per resolved task divides a run's total by its successes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tau_bench.records import EpisodeRecord, is_success

PARTS = ("agent", "user", "judge", "platform")
LOCAL_AGENTS = frozenset({"tool-calling", "act", "react", "few-shot", "oracle"})
NO_MODEL_AGENTS = frozenset({"oracle"})
NO_MODEL_USERS = frozenset({"scripted", "human"})


def _priced(usage: Mapping[str, Any]) -> float | None:
    """The usage's cost when it is one, 0 when no call was made, else unknown."""
    cost = float(usage.get("cost") or 0.0)
    if cost > 0:
        return cost
    return 0.0 if not usage.get("calls") else None


def agent_requests(record: EpisodeRecord) -> int:
    return sum(1 for t in record.turns if t.get("role") == "agent")


def episode_cost(
    record: EpisodeRecord, platform_price: float | None = None
) -> dict[str, float | None]:
    """The cost record of one episode (see the module docstring)."""
    strategy = record.agent_strategy
    hosted = bool(strategy) and strategy not in LOCAL_AGENTS
    if strategy in NO_MODEL_AGENTS:  # no model, unless the agent says it paid one
        agent: float | None = float(record.agent_usage.get("cost") or 0.0)
    elif hosted:
        agent = float(record.agent_usage.get("cost") or 0.0) or None
    else:
        agent = _priced(record.agent_usage)
    user = 0.0 if record.user_strategy in NO_MODEL_USERS else _priced(record.user_usage)
    judge_usage = getattr(record, "judge_usage", None)
    judge = _priced(judge_usage) if isinstance(judge_usage, Mapping) and judge_usage else 0.0
    if not hosted:
        platform: float | None = 0.0
    elif platform_price is None:
        platform = None
    else:
        platform = platform_price * agent_requests(record)
    parts = {"agent": agent, "user": user, "judge": judge, "platform": platform}
    known = sum(v for v in parts.values() if v is not None)
    unknown = any(v is None for v in parts.values())
    return {**parts, "total": None if unknown else known, "known": known}


def cost_of(record: EpisodeRecord) -> dict[str, float | None]:
    """The record's own cost record, or one computed now (older logs: no platform price)."""
    recorded = getattr(record, "cost", None)
    return recorded if isinstance(recorded, dict) and recorded else episode_cost(record)


def totals(records: Iterable[EpisodeRecord]) -> dict[str, Any]:
    """Per part and in all: the sum, None when any episode's part is unknown; `known` the
    sum of what is known; `per_resolved_task` the total over the successes."""
    sums: dict[str, float] = dict.fromkeys((*PARTS, "known"), 0.0)
    unknown: dict[str, int] = dict.fromkeys(PARTS, 0)
    resolved = 0
    for r in records:
        cost = cost_of(r)
        for part in PARTS:
            value = cost.get(part)
            if value is None:
                unknown[part] += 1
            else:
                sums[part] += float(value)
        sums["known"] += float(cost.get("known") or 0.0)
        resolved += 1 if not r.is_error and is_success(r.reward) else 0
    out: dict[str, Any] = {p: None if unknown[p] else sums[p] for p in PARTS}
    total = None if any(unknown.values()) else sum(sums[p] for p in PARTS)
    out.update(
        {
            "total": total,
            "known": sums["known"],
            "unknown_episodes": unknown,
            "resolved": resolved,
            "per_resolved_task": (total / resolved) if total is not None and resolved else None,
        }
    )
    return out


def money(value: float | None) -> str:
    """`$0.0123`, or `unknown` - never $0 for what is not known."""
    return "unknown" if value is None else f"${value:.4f}"


def episode_money(record: EpisodeRecord) -> str:
    """The episode's total cost as one episode's view shows it (`money` of its cost
    record): `unknown` when a part is, e.g. the agent of a τ-bench results file."""
    return money(cost_of(record).get("total"))


def cost_table(rows: Mapping[str, Mapping[str, Any]]) -> Any:
    """Cost per run (rich): the parts, the total, per resolved task; an "all runs" row."""
    from rich.table import Table

    table = Table(title="Cost (USD; unknown = not reported or not priced)")
    table.add_column("run", overflow="fold")
    for name in (*PARTS, "total", "known part", "resolved episodes", "per resolved"):
        table.add_column(name, justify="right")
    for label, t in rows.items():
        table.add_row(
            label,
            *(money(t.get(p)) for p in PARTS),
            money(t.get("total")),
            money(t.get("known")),
            str(t.get("resolved", 0)),
            money(t.get("per_resolved_task")),
        )
    return table


def across(rows: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The totals of several runs' `totals`."""
    out: dict[str, Any] = {}
    for part in (*PARTS, "total"):
        values = [r.get(part) for r in rows.values()]
        out[part] = None if any(v is None for v in values) else sum(values)  # type: ignore[arg-type]
    out["known"] = sum(float(r.get("known") or 0.0) for r in rows.values())
    out["resolved"] = sum(int(r.get("resolved") or 0) for r in rows.values())
    total, resolved = out["total"], out["resolved"]
    out["per_resolved_task"] = total / resolved if total is not None and resolved else None
    return out


def summary_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Rows for the run summary table: the parts, the total, per resolved task."""
    costs = summary.get("costs") or {}
    if not costs:
        return []
    return [
        ("cost agent / user", f"{money(costs.get('agent'))} / {money(costs.get('user'))}"),
        ("cost judge / platform", f"{money(costs.get('judge'))} / {money(costs.get('platform'))}"),
        ("cost total", money(costs.get("total"))),
        ("cost per resolved task", money(costs.get("per_resolved_task"))),
    ]
