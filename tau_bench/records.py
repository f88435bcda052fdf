"""Episode records: one finished (task, trial) as the log stores it, and how one is made.

Kept apart from the files a run writes (`results`, `results_log`) so that reading
records needs no file machinery.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from tau_adapters.redaction import mask_values
from tau_bench.error_classes import AGENT_FAILURE, HARNESS, classify

SUCCESS_TOLERANCE = 1e-6


def is_success(reward: float | None) -> bool:
    """A reward of 1 (within float noise), as the original's pass^k counted it."""
    return reward is not None and abs(reward - 1.0) <= SUCCESS_TOLERANCE


@dataclass(repr=False)
class EpisodeRecord:
    """One finished (task, trial): reward, trajectory, timings, usage, or the error."""

    task_id: int | str  # "retail/12" in multi-domain runs
    trial: int
    reward: float | None
    reward_info: dict[str, Any] | None = None
    task: dict[str, Any] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = ""
    steps: int = 0
    user_turns: int = 0
    agent_usage: dict[str, Any] = field(default_factory=dict)
    user_usage: dict[str, Any] = field(default_factory=dict)
    duration: float = 0.0
    error: dict[str, Any] | None = None
    agent_strategy: str = ""
    model: str | None = None
    user_strategy: str = ""
    user_model: str | None = None
    dropped_tool_calls: int = 0
    warnings: list[str] = field(default_factory=list)
    started_at: str = ""
    domain: str = ""
    seed: int | None = None
    judge_usage: dict[str, Any] = field(default_factory=dict)
    # agent / user / judge / platform / total USD, None = unknown (tau_bench.cost)
    cost: dict[str, Any] | None = None
    # the final DB hashes: {"agent": ..., "user": ...} (user: τ³ dual control, else None)
    hashes: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[int | str, int]:
        return (self.task_id, self.trial)

    def __repr__(self) -> str:
        # Not the trajectory: lists of records get formatted in logs and by asyncio.
        error = self.error.get("kind") if self.error else None
        return (
            f"EpisodeRecord(task_id={self.task_id!r}, trial={self.trial}, "
            f"reward={self.reward!r}, stop_reason={self.stop_reason!r}, error={error!r})"
        )

    @property
    def error_class(self) -> str | None:
        """harness / agent_failure / agent_unavailable (`tau_bench.error_classes`)."""
        return classify(self.error)

    @property
    def is_error(self) -> bool:
        """Errored and not scored: an agent failure has an error but is scored 0."""
        return self.error is not None and self.error_class != AGENT_FAILURE

    @property
    def agent_cost(self) -> float:
        return float(self.agent_usage.get("cost", 0.0) or 0.0)

    @property
    def user_cost(self) -> float:
        return float(self.user_usage.get("cost", 0.0) or 0.0)

    def to_dict(self) -> dict[str, Any]:
        # Shallow on purpose: the record is serialised right away, and asdict's deep
        # copy of a trajectory costs more than writing it.
        return {"type": "episode", **{f.name: getattr(self, f.name) for f in fields(self)}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeRecord:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


def now_iso() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


def record_from_episode(
    scored: Any,
    task: Any,
    *,
    agent_strategy: str,
    model: str | None,
    user_strategy: str,
    user_model: str | None,
    started_at: str,
    domain: str = "",
    seed: int | None = None,
    secrets: Iterable[str] = (),
) -> EpisodeRecord:
    """The record of a `tau_bench.episode.ScoredEpisode`; every one of `secrets` (what
    the agent provider declares: its tokens, API keys) is masked everywhere in it, so
    no file written from records (log, τ-bench JSON, report, MT-bench) can leak one."""
    result = scored.result
    error = result.error.to_dict() if result.error is not None else None
    if error is not None:
        error["class"] = classify(error)
    failed = error is not None and error["class"] == AGENT_FAILURE  # the bot's doing: 0
    record = EpisodeRecord(
        task_id=scored.task_id,
        trial=scored.trial,
        reward=0.0 if failed else None if error else scored.reward_value,
        reward_info=scored.reward.to_dict() if scored.reward is not None else None,
        task=task.model_dump(),
        messages=result.messages,
        turns=[t.to_dict() for t in result.turns],
        stop_reason=result.stop_reason,
        steps=result.steps,
        user_turns=result.user_turns,
        agent_usage=result.agent_usage.to_dict(),
        user_usage=result.user_usage.to_dict(),
        duration=result.duration,
        error=error,
        agent_strategy=agent_strategy,
        model=model,
        user_strategy=user_strategy,
        user_model=user_model,
        dropped_tool_calls=result.dropped_tool_calls,
        warnings=list(result.warnings),
        started_at=started_at,
        domain=domain,
        seed=seed,
        judge_usage=dict(getattr(scored.reward, "judge_usage", None) or {}),
        hashes=final_hashes(scored.env),
    )
    return masked(record, secrets)


def final_hashes(env: Any) -> dict[str, Any]:
    """The episode's final agent-side and user-side DB hashes (None where there is none)."""
    out: dict[str, Any] = {}
    for key, method in (("agent", "data_hash"), ("user", "user_data_hash")):
        get = getattr(env, method, None)
        try:
            out[key] = get() if get is not None else None
        except Exception:  # a hash is evidence, never a reason to lose the record
            out[key] = None
    return out


def record_from_exception(
    task_id: int | str,
    trial: int,
    task: Any,
    exc: BaseException,
    *,
    source: str,
    duration: float,
    agent_strategy: str,
    model: str | None,
    user_strategy: str,
    user_model: str | None,
    started_at: str,
    domain: str = "",
    seed: int | None = None,
    secrets: Iterable[str] = (),
) -> EpisodeRecord:
    """An episode that failed outside the loop (building the adapter or user, scoring);
    `secrets` are masked as in `record_from_episode`."""
    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    error = {
        "source": source,
        "kind": getattr(exc, "kind", type(exc).__name__),
        "message": str(exc) or detail,
        "retryable": bool(getattr(exc, "retryable", False)),
        "detail": detail,
    }
    # Outside the conversation (building the adapter or user, scoring): never the bot's
    # answer, so never scored; a transport failure building a hosted agent's session
    # is still "unavailable".
    error["class"] = classify(error)
    if error["class"] == AGENT_FAILURE:
        error["class"] = HARNESS
    record = EpisodeRecord(
        task_id=task_id,
        trial=trial,
        reward=None,
        task=task.model_dump(),
        stop_reason="error",
        duration=duration,
        error=error,
        agent_strategy=agent_strategy,
        model=model,
        user_strategy=user_strategy,
        user_model=user_model,
        started_at=started_at,
        domain=domain,
        seed=seed,
    )
    return masked(record, secrets)


def masked(record: EpisodeRecord, secrets: Iterable[str]) -> EpisodeRecord:
    """`record` with every occurrence of a secret masked in every string of it."""
    values = [s for s in secrets if s]
    if not values:
        return record
    data = {f.name: getattr(record, f.name) for f in fields(record)}
    return EpisodeRecord(**mask_values(data, values))
