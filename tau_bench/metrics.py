"""Run metrics: average reward, pass^k, pass@k, cost, tokens, latency percentiles, errors.

Pure functions over episode records. Errored episodes are classed by
`tau_bench.error_classes`: agent failures (garbage from the bot) are scored 0; harness
failures and unavailable agents are not scored: they are counted separately and kept out
of the reward average, pass^k and pass@k, whose denominator per task is the number of
*scored* trials. The summary also gives the scores with unavailable episodes counted as
failures (`unavailable_as_failures`).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tau_bench import error_classes
from tau_bench.cost import totals as cost_totals
from tau_bench.records import EpisodeRecord, is_success


def pass_hat_k(counts: Mapping[Any, tuple[int, int]], k: int) -> float | None:
    """The τ-bench paper's pass^k: mean over tasks of C(c, k) / C(n, k).

    `counts` maps a task to (c successes, n scored trials). Tasks with fewer than `k`
    scored trials cannot say anything about k and are left out; None if none remain.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    eligible = [(c, n) for c, n in counts.values() if n >= k]
    if not eligible:
        return None
    return sum(math.comb(c, k) / math.comb(n, k) for c, n in eligible) / len(eligible)


def pass_at_k(counts: Mapping[Any, tuple[int, int]], k: int) -> float | None:
    """pass@k, the unbiased estimator: mean over tasks of 1 - C(n-c, k) / C(n, k).

    The probability that at least one of k samples drawn without replacement from the
    n scored trials succeeds. Tasks with fewer than `k` scored trials are left out;
    None if none remain.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    eligible = [(c, n) for c, n in counts.values() if n >= k]
    if not eligible:
        return None
    return sum(1.0 - math.comb(n - c, k) / math.comb(n, k) for c, n in eligible) / len(eligible)


def spread(values: Sequence[float]) -> dict[str, float | None]:
    """min / max / sample standard deviation (n-1; 0.0 for a single value)."""
    if not values:
        return {"min": None, "max": None, "stdev": None}
    return {
        "min": min(values),
        "max": max(values),
        "stdev": statistics.stdev(values) if len(values) > 1 else 0.0,
    }


def success_counts(records: Iterable[EpisodeRecord]) -> dict[Any, tuple[int, int]]:
    """Per task: (successful scored trials, scored trials); errored ones are skipped."""
    counts: dict[Any, list[int]] = {}
    for r in records:
        if r.is_error:
            continue
        entry = counts.setdefault(r.task_id, [0, 0])
        entry[0] += 1 if is_success(r.reward) else 0
        entry[1] += 1
    return {task: (c, n) for task, (c, n) in counts.items()}


def pass_hat_ks(records: Iterable[EpisodeRecord], num_trials: int) -> dict[int, float | None]:
    counts = success_counts(records)
    return {k: pass_hat_k(counts, k) for k in range(1, num_trials + 1)}


def user_model_of(record: EpisodeRecord) -> str:
    """The user a record had: its model, or its strategy when it has none (scripted)."""
    return record.user_model or record.user_strategy or "unknown"


def domain_of(record: EpisodeRecord) -> str:
    """The domain of a record (older records: from a namespaced task id, else "")."""
    if record.domain:
        return record.domain
    if isinstance(record.task_id, str) and "/" in record.task_id:
        return record.task_id.split("/", 1)[0]
    return ""


def group_metrics(
    records: Sequence[EpisodeRecord],
    key: Callable[[EpisodeRecord], str],
    num_trials: int,
) -> dict[str, dict[str, Any]]:
    """Scores per group (e.g. per user model): episodes, scored, errors, avg_reward,
    successes and pass^k for k = 1..num_trials, computed within each group."""
    groups: dict[str, list[EpisodeRecord]] = {}
    for r in records:
        groups.setdefault(key(r), []).append(r)
    out: dict[str, dict[str, Any]] = {}
    for name, members in groups.items():
        scored = [r for r in members if not r.is_error]
        out[name] = {
            "episodes": len(members),
            "scored": len(scored),
            "errors": len(members) - len(scored),
            "avg_reward": (sum(r.reward or 0.0 for r in scored) / len(scored)) if scored else None,
            "successes": sum(1 for r in scored if is_success(r.reward)),
            "pass_hat_k": {str(k): v for k, v in pass_hat_ks(members, num_trials).items()},
        }
    return out


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) with linear interpolation, as numpy's default."""
    if not values:
        return None
    data = sorted(values)
    pos = (len(data) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def _spread(values: Sequence[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "mean": sum(values) / len(values) if values else None,
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "max": max(values) if values else None,
    }


def _usage_total(records: Sequence[EpisodeRecord], side: str) -> dict[str, Any]:
    total = {"prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0, "calls": 0}
    for r in records:
        usage = r.agent_usage if side == "agent" else r.user_usage
        for key in total:
            total[key] += usage.get(key, 0) or 0
    return total


def _error_kind(record: EpisodeRecord) -> str:
    """The error's `kind` as a summary key: a string (a results file from elsewhere may
    hold anything there; `unknown` when it holds no string)."""
    kind = (record.error or {}).get("kind", "unknown")
    return kind if isinstance(kind, str) else "unknown"


def summarize(
    records: Sequence[EpisodeRecord],
    num_trials: int,
    planned: int | None = None,
    superseded: Sequence[EpisodeRecord] = (),
) -> dict[str, Any]:
    """The run summary saved next to the results and printed as a table.

    `records` are the latest record per (task, trial); `superseded` every other attempt
    the run's log holds (errored attempts that this resume or an earlier one ran again:
    `RunPlan.superseded`). Costs and tokens include both and errored episodes (the money
    was spent; `replaced_attempts` says how much went to the superseded ones); rewards,
    pass^k and latency percentiles use the scored latest records only.
    """
    scored = [r for r in records if not r.is_error]
    errored = [r for r in records if r.is_error]
    rewards = [r.reward or 0.0 for r in scored]
    spent = [*records, *superseded]
    agent = _usage_total(spent, "agent")
    user = _usage_total(spent, "user")
    turn_latencies = [
        float(t["latency"])
        for r in scored
        for t in r.turns
        if t.get("role") == "agent" and t.get("latency") is not None
    ]
    return {
        "episodes_planned": planned if planned is not None else len(records),
        "episodes_done": len(records),
        "episodes_scored": len(scored),
        "episodes_missing": (planned - len(records)) if planned is not None else 0,
        "errors": len(errored),
        "error_kinds": dict(Counter(_error_kind(r) for r in errored)),
        "error_classes": error_classes.counts(records),
        "scoring_convention": error_classes.EXCLUDED,
        "unavailable_as_failures": _as_failures(records, num_trials),
        "tasks": len({r.task_id for r in records}),
        "num_trials": num_trials,
        "avg_reward": sum(rewards) / len(rewards) if rewards else None,
        "successes": sum(1 for r in scored if is_success(r.reward)),
        "pass_hat_k": {str(k): v for k, v in pass_hat_ks(records, num_trials).items()},
        "cost": {
            "agent": agent["cost"],
            "user": user["cost"],
            "total": agent["cost"] + user["cost"],
        },
        "tokens": {
            "agent": {k: agent[k] for k in ("prompt_tokens", "completion_tokens", "calls")},
            "user": {k: user[k] for k in ("prompt_tokens", "completion_tokens", "calls")},
        },
        "latency": {
            "agent_turn": _spread(turn_latencies),
            "episode": _spread([r.duration for r in scored]),
        },
        "stop_reasons": dict(Counter(r.stop_reason for r in records)),
        "costs": cost_totals(spent),
        **_replaced(superseded),
        "by_user_model": group_metrics(records, user_model_of, num_trials),
        **_by_domain(records, num_trials),
    }


def _replaced(superseded: Sequence[EpisodeRecord]) -> dict[str, Any]:
    """`replaced_attempts` when a resume re-ran errored episodes: how many, and their part
    of `cost` (already counted in it), so the spend of the final records alone is known."""
    if not superseded:
        return {}
    agent = _usage_total(superseded, "agent")["cost"]
    user = _usage_total(superseded, "user")["cost"]
    return {
        "replaced_attempts": {
            "episodes": len(superseded),
            "cost": {"agent": agent, "user": user, "total": agent + user},
        }
    }


def _as_failures(records: Sequence[EpisodeRecord], num_trials: int) -> dict[str, Any]:
    """The second convention: agent-unavailable episodes counted as failures (reward 0)."""
    counted = error_classes.unavailable_as_failures(records)
    rewards = [r.reward or 0.0 for r in counted if not r.is_error]
    return {
        "convention": error_classes.AS_FAILURES,
        "avg_reward": sum(rewards) / len(rewards) if rewards else None,
        "pass_hat_k": {str(k): v for k, v in pass_hat_ks(counted, num_trials).items()},
    }


def _by_domain(records: Sequence[EpisodeRecord], num_trials: int) -> dict[str, Any]:
    """`by_domain` for multi-domain runs only (a single-domain summary is unchanged)."""
    if len({domain_of(r) for r in records}) < 2:
        return {}
    return {"by_domain": group_metrics(records, domain_of, num_trials)}


def _scores(records: Sequence[EpisodeRecord]) -> dict[str, Any]:
    scored = [r for r in records if not r.is_error]
    return {
        "episodes": len(records),
        "scored": len(scored),
        "errors": len(records) - len(scored),
        "tasks": len({r.task_id for r in scored}),
        "avg_reward": (sum(r.reward or 0.0 for r in scored) / len(scored)) if scored else None,
    }


def eval_metrics(
    groups: Mapping[str, Sequence[EpisodeRecord]], ks: Sequence[int]
) -> dict[str, Any]:
    """pass@k and pass^k per user model and overall, and the spread of pass^1.

    `groups` maps a user model to its episodes (k samples of each task). Overall
    figures average over every (user model, task) pair, so each user model weighs by
    its tasks; the spread is min / max / sample stdev of the per-model pass^1.
    """
    per_model: dict[str, Any] = {}
    pooled: dict[Any, tuple[int, int]] = {}
    everything: list[EpisodeRecord] = []
    for model, records in groups.items():
        counts = success_counts(records)
        per_model[model] = {
            **_scores(records),
            "pass_at_k": {str(k): pass_at_k(counts, k) for k in ks},
            "pass_hat_k": {str(k): pass_hat_k(counts, k) for k in ks},
        }
        pooled.update({(model, task): cn for task, cn in counts.items()})
        everything.extend(records)
    overall = {
        **_scores(everything),
        "pass_at_k": {str(k): pass_at_k(pooled, k) for k in ks},
        "pass_hat_k": {str(k): pass_hat_k(pooled, k) for k in ks},
    }
    pass1: dict[str, float] = {}
    for model, records in groups.items():
        value = pass_hat_k(success_counts(records), 1)
        if value is not None:
            pass1[model] = value
    stats: dict[str, Any] = spread(list(pass1.values()))
    stats["min_user_model"] = min(pass1, key=lambda m: pass1[m]) if pass1 else None
    stats["max_user_model"] = max(pass1, key=lambda m: pass1[m]) if pass1 else None
    return {
        "ks": list(ks),
        "per_user_model": per_model,
        "overall": overall,
        "spread": {"pass_hat_1": stats},
    }
