"""The original τ-bench results format read as records, and what its file says of a run.

The original format does not carry the agent, model, user model or domain: they are
worked out here from the runner's file-name pattern and from the trajectory itself (the
policy's title names the domain). `loading` adds the `<stem>.summary.json` next to it.
"""

from __future__ import annotations

import re
from typing import Any

from tau_bench.metrics import domain_of
from tau_bench.records import EpisodeRecord
from tau_bench.task_ids import parse_task_id, task_domain

# Longest first, so "tool-calling" wins over a model name starting with "act".
_STRATEGIES = ("tool-calling", "few-shot", "oracle", "react", "act")
_USER_STRATEGIES = "llm|react|verify|reflection|human|scripted"
_STEM = re.compile(
    r"^(?P<agent_model>.+)-(?P<temperature>\d+(?:\.\d+)?)_range_(?P<start>-?\d+)-(?P<end>-?\d+)"
    rf"_user-(?P<user_model>.+)-(?P<user_strategy>{_USER_STRATEGIES})_\d{{10}}(?:_\d+)?$"
)
_POLICY_TITLES = {"# airline agent policy": "airline", "# retail agent policy": "retail"}


def record_from_tau_bench(entry: dict[str, Any]) -> EpisodeRecord:
    """One element of a τ-bench results list as a record.

    The original wrote an episode that raised as reward 0 with `info.error` and an
    empty trajectory; such entries become errored records (not scored), as ours are.
    """
    info = entry.get("info")
    if not isinstance(info, dict):
        info = {}
    error = None
    if "error" in info and not entry.get("traj"):
        error = {
            "source": "unknown",
            "kind": "error",
            "message": str(info.get("error")),
            "retryable": False,
            "detail": str(info.get("traceback", "")),
        }
    reward = entry.get("reward")
    task = info.get("task")
    reward_info = info.get("reward_info")
    task_id = parse_task_id(entry["task_id"])
    return EpisodeRecord(
        task_id=task_id,
        trial=int(entry.get("trial", 0) or 0),
        reward=None if error or reward is None else float(reward),
        reward_info=reward_info if isinstance(reward_info, dict) else None,
        task=task if isinstance(task, dict) else {},
        messages=list(entry.get("traj") or []),
        stop_reason=str(info.get("stop_reason") or ("error" if error else "")),
        agent_usage={"cost": float(info.get("agent_cost") or 0.0)},
        user_usage={"cost": float(info.get("user_cost") or 0.0)},
        error=error,
        warnings=[str(e) for e in info.get("errors") or []],
        domain=task_domain(task_id) or "",
    )


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
