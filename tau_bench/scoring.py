"""Reward: final DB hash against the ground-truth hash, plus the outputs check.

Identical to the original's reward (spec §6), including its quirks:
* Q4: for tasks with outputs, the original's `info` is `{r_outputs, outputs}` only, though
  the reward still requires the hash match. `RewardResult.original_info` reproduces that;
  `RewardResult` itself keeps both results.
* Q2: the original replayed the ground truth through the same env, so the outputs check
  also scanned the ground truth's own `respond` actions. We include them the same way.
* Q8: outputs are matched as lower-cased substrings of the agent's messages with commas
  removed from the messages only.
The ground-truth hash is computed once per task (without touching the agent's episode)
and cached per process.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tau_bench.hashing import hashable_repr
from tau_bench.tasks import RESPOND_ACTION, Action, Task

if TYPE_CHECKING:
    from tau_bench.domains import Domain
    from tau_bench.env import Env


@dataclass(frozen=True)
class GroundTruth:
    data_hash: str
    overlay: dict[str, dict[str, Any]]


@dataclass
class FieldDiff:
    table: str
    record: str
    path: str
    agent: Any
    expected: Any

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "record": self.record,
            "path": self.path,
            "agent": self.agent,
            "expected": self.expected,
        }


@dataclass
class RewardResult:
    reward: float
    r_actions: float
    data_hash: str
    gt_data_hash: str
    gt_actions: list[Action]
    r_outputs: float | None = None
    outputs: dict[str, bool] = field(default_factory=dict)
    diff: list[FieldDiff] = field(default_factory=list)
    unfinished: bool = False

    @property
    def original_info(self) -> dict[str, Any]:
        """The original's `info` object (RewardOutputInfo replaces RewardActionInfo, Q4)."""
        if self.r_outputs is not None:
            return {"r_outputs": self.r_outputs, "outputs": dict(self.outputs)}
        return {"r_actions": self.r_actions, "gt_data_hash": self.gt_data_hash}

    def to_dict(self) -> dict[str, Any]:
        """Richer than the original: both results, both hashes and the DB diff."""
        return {
            "reward": self.reward,
            "info": self.original_info,
            "actions": [a.model_dump() for a in self.gt_actions],
            "r_actions": self.r_actions,
            "r_outputs": self.r_outputs,
            "outputs": dict(self.outputs),
            "data_hash": self.data_hash,
            "gt_data_hash": self.gt_data_hash,
            "db_diff": [d.to_dict() for d in self.diff],
            "unfinished": self.unfinished,
        }


_gt_cache: dict[tuple[str, str, str], GroundTruth] = {}
_gt_lock = threading.Lock()


def ground_truth(domain: Domain, task: Task) -> GroundTruth:
    """The DB state after the task's actions (terminate tools skipped), cached per task."""
    actions_key = json.dumps([a.model_dump() for a in task.actions], sort_keys=False)
    key = (domain.name, str(domain.data_dir), actions_key)
    cached = _gt_cache.get(key)
    if cached is not None:
        return cached
    env = domain.new_env(task)
    for action in task.actions:
        if action.name in domain.terminate_tools:
            continue
        env.execute(action.name, action.kwargs)
    gt = GroundTruth(data_hash=env.data_hash(), overlay=env.db.overlay())
    with _gt_lock:
        _gt_cache[key] = gt
    return gt


def outputs_found(actions: list[Action], outputs: list[str]) -> dict[str, bool]:
    """Which required outputs appear in some `respond` content (spec §6.5, Q8)."""
    texts = [
        str(a.kwargs.get("content", "")).lower().replace(",", "")
        for a in actions
        if a.name == RESPOND_ACTION
    ]
    return {o: any(o.lower() in t for t in texts) for o in outputs}


def compute_reward(env: Env, task: Task) -> RewardResult:
    gt = ground_truth(env.domain, task)
    agent_hash = env.data_hash()
    r_actions = 1.0 if agent_hash == gt.data_hash else 0.0
    reward = r_actions
    gt_actions = [a for a in task.actions if a.name != RESPOND_ACTION]
    result = RewardResult(
        reward=reward,
        r_actions=r_actions,
        data_hash=agent_hash,
        gt_data_hash=gt.data_hash,
        gt_actions=gt_actions,
    )
    if task.outputs:
        scanned = env.actions + [
            a for a in task.actions if a.name not in env.domain.terminate_tools
        ]
        found = outputs_found(scanned, task.outputs)
        result.outputs = found
        result.r_outputs = 1.0 if all(found.values()) else 0.0
        if result.r_outputs == 0.0:
            result.reward = 0.0
    if r_actions == 0.0:
        result.diff = db_diff(env.db.overlay(), gt.overlay, env)
    return result


def _diff_values(path: str, agent: Any, expected: Any, out: list[tuple[str, Any, Any]]) -> None:
    if isinstance(agent, dict) and isinstance(expected, dict):
        for k in list(agent) + [k for k in expected if k not in agent]:
            _diff_values(
                f"{path}.{k}" if path else str(k),
                agent.get(k, _MISSING),
                expected.get(k, _MISSING),
                out,
            )
        return
    if isinstance(agent, list) and isinstance(expected, list) and len(agent) == len(expected):
        for i, (a, e) in enumerate(zip(agent, expected, strict=True)):
            _diff_values(f"{path}[{i}]", a, e, out)
        return
    if agent is _MISSING or expected is _MISSING or hashable_repr(agent) != hashable_repr(expected):
        out.append((path, agent, expected))


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


def db_diff(
    agent_overlay: dict[str, dict[str, Any]],
    gt_overlay: dict[str, dict[str, Any]],
    env: Env,
    limit: int = 50,
) -> list[FieldDiff]:
    """Which records and fields differ between the agent's DB and the ground-truth DB."""
    base = env.domain.base_db.tables
    diffs: list[FieldDiff] = []
    for table in base:
        keys = list(agent_overlay.get(table, {})) + [
            k for k in gt_overlay.get(table, {}) if k not in agent_overlay.get(table, {})
        ]
        for key in keys:
            a = agent_overlay.get(table, {}).get(key, base[table].get(key, _MISSING))
            e = gt_overlay.get(table, {}).get(key, base[table].get(key, _MISSING))
            found: list[tuple[str, Any, Any]] = []
            _diff_values("", a, e, found)
            for path, av, ev in found:
                diffs.append(
                    FieldDiff(
                        table=table,
                        record=key,
                        path=path,
                        agent=None if av is _MISSING else av,
                        expected=None if ev is _MISSING else ev,
                    )
                )
                if len(diffs) >= limit:
                    return diffs
    return diffs


def clear_ground_truth_cache() -> None:
    with _gt_lock:
        _gt_cache.clear()
