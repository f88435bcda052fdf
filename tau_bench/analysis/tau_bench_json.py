"""The original τ-bench results format read as records, and what its file says of a run.

The original format does not carry the agent, model, user model or domain: they are
worked out here from the runner's file-name pattern and from the trajectory itself (the
policy's title names the domain). `loading` adds the `<stem>.summary.json` next to it.
"""

from __future__ import annotations

import re
from typing import Any

from tau_adapters.jsonsafe import MAX_DEPTH, depth_exceeds
from tau_bench.metrics import domain_of
from tau_bench.records import EpisodeRecord, RecordError
from tau_bench.task_ids import parse_task_id, task_domain

# Longest first, so "tool-calling" wins over a model name starting with "act".
_STRATEGIES = ("tool-calling", "few-shot", "oracle", "react", "act")
_USER_STRATEGIES = "llm|react|verify|reflection|human|scripted"
_STEM = re.compile(
    r"^(?P<agent_model>.+)-(?P<temperature>\d+(?:\.\d+)?)_range_(?P<start>-?\d+)-(?P<end>-?\d+)"
    rf"_user-(?P<user_model>.+)-(?P<user_strategy>{_USER_STRATEGIES})_\d{{10}}(?:_\d+)?$"
)
_POLICY_TITLES = {"# airline agent policy": "airline", "# retail agent policy": "retail"}


def record_from_tau_bench(entry: dict[str, Any], max_trials: int | None = None) -> EpisodeRecord:
    """One element of a τ-bench results list as a record.

    The original wrote an episode that raised as reward 0 with `info.error` and an
    empty trajectory; such entries become errored records (not scored), as ours are.
    Fields of the wrong type (a reward that is text, NaN or outside [0, 1], a trajectory
    that is not a list of messages, a trial of `max_trials` or more...) are refused with
    `RecordError` (a ValueError) naming the field.
    """
    info = entry.get("info")
    if not isinstance(info, dict):
        info = {}
    traj = entry.get("traj")
    error = None
    if "error" in info and not traj:
        error = {
            "source": "unknown",
            "kind": "error",
            "message": _as_text(info.get("error")),
            "retryable": False,
            "detail": _as_text(info.get("traceback", "")),
        }
    reward = entry.get("reward")
    task = info.get("task")
    reward_info = info.get("reward_info")
    try:
        task_id = parse_task_id(entry["task_id"])
    except ValueError as exc:
        raise RecordError(str(exc)) from None
    errors = info.get("errors")
    if errors is not None and not isinstance(errors, list):
        raise RecordError(f"info.errors: expected a list, got {type(errors).__name__}")
    costs: dict[str, float | None] = {}
    for key in ("agent_cost", "user_cost"):
        value = info.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise RecordError(f"info.{key}: expected a number, got {value!r:.60}")
        costs[key] = None if value is None else float(value)
    trial = entry.get("trial")  # older files have none: one trial
    try:
        return EpisodeRecord.from_dict(
            {
                "task_id": task_id,
                "trial": 0 if trial is None else trial,
                "reward": None if error or reward is None else reward,
                "reward_info": reward_info if isinstance(reward_info, dict) else None,
                "task": task if isinstance(task, dict) else {},
                "messages": [] if traj is None else traj,
                "stop_reason": _as_text(info.get("stop_reason") or ("error" if error else "")),
                "agent_usage": {"cost": costs["agent_cost"] or 0.0},
                "user_usage": {"cost": costs["user_cost"] or 0.0},
                "cost": _cost_record(costs["agent_cost"], costs["user_cost"]),
                "error": error,
                "warnings": [_as_text(e) for e in errors or []],
                "domain": task_domain(task_id) or "",
            },
            max_trials=max_trials,
        )
    except RecordError as exc:  # named as the entry names the field
        field, sep, rest = str(exc).partition(":")
        head = field.split(".")[0].split("[")[0]
        if sep and head in _ENTRY_NAMES:
            field = _ENTRY_NAMES[head] + field[len(head) :]
        raise RecordError(f"{field}{sep}{rest}") from None


def _cost_record(agent: float | None, user: float | None) -> dict[str, float | None]:
    """The episode's cost record (`tau_bench.cost`) from what the entry says. The
    original runner kept only `user_cost` (the agent's cost never reached its results),
    so a part the entry does not give is unknown (None), never $0: a published GPT-4o
    run would otherwise read as a free agent."""
    parts = {"agent": agent, "user": user, "judge": 0.0, "platform": 0.0}
    known = sum(v for v in parts.values() if v is not None)
    total = None if agent is None or user is None else known
    return {**parts, "total": total, "known": known}


def _as_text(value: Any) -> str:
    """A field the original wrote as text (an error, a stop reason) as text: `str` of
    it, except a list or object nested deeper than `MAX_DEPTH` levels, which is named
    (`str` of it would recurse past Python's limit)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list) and depth_exceeds(value, MAX_DEPTH):
        return f"<{type(value).__name__} nested deeper than {MAX_DEPTH} levels>"
    return str(value)


_ENTRY_NAMES = {"messages": "traj", "task": "info.task", "reward_info": "info.reward_info"}


def parse_run_stem(stem: str) -> dict[str, Any]:
    """What the runner's file name says (agent, model, user model...), or {}."""
    match = _STEM.match(stem)
    if not match:
        return {}
    agent_model = match["agent_model"]
    strategy, model = agent_model, None
    for known in _STRATEGIES:
        if agent_model.startswith(known + "-"):
            strategy, model = known, agent_model[len(known) + 1 :]
            break
    return {
        "agent_strategy": strategy,
        "model": None if model in (None, "default") else model,
        "user_model": match["user_model"],
        "user_strategy": match["user_strategy"],
    }


def guess_env(records: list[EpisodeRecord], name: str) -> str | None:
    """The domains named by the task ids (`retail,airline`), else the domain from the
    policy title in a trajectory, else from the file name."""
    named = list(dict.fromkeys(d for r in records if (d := domain_of(r))))
    if named:
        return ",".join(named)
    for record in records:
        for message in record.messages[:1]:
            if message.get("role") == "system":
                title = str(message.get("content") or "").lstrip().split("\n", 1)[0]
                env = _POLICY_TITLES.get(title.strip().lower())
                if env:
                    return env
    tokens = set(re.split(r"[^a-z]+", name.lower()))
    found = [env for env in ("airline", "retail") if env in tokens]
    return found[0] if len(found) == 1 else None
