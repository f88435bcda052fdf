"""One benchmark episode: a fresh Env, the conversation loop, and the reward."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from tau_adapters.loop import DEFAULT_MAX_STEPS, EpisodeResult, run_episode
from tau_adapters.protocol import AgentAdapter, SessionContext, UserSimulator
from tau_bench.domains import Domain
from tau_bench.env import Env
from tau_bench.scoring import RewardResult
from tau_bench.tasks import Task


@dataclass
class ScoredEpisode:
    task_id: int | str
    trial: int
    result: EpisodeResult
    reward: RewardResult | None
    env: Env

    @property
    def reward_value(self) -> float:
        return self.reward.reward if self.reward is not None else 0.0


def session_for(
    domain: Domain,
    task: Task,
    task_id: int | str,
    trial: int,
    *,
    session_id: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> SessionContext:
    return SessionContext(
        session_id=session_id or str(uuid.uuid4()),
        domain=domain.name,
        tools=domain.tool_schemas,
        policy=domain.policy,
        task_id=task_id,
        user_id=task.user_id,
        trial=trial,
        metadata={"terminate_tools": sorted(domain.terminate_tools), **(metadata or {})},
        task=task,
    )


async def run_task(
    domain: Domain,
    task: Task,
    task_id: int | str,
    adapter: AgentAdapter,
    user: UserSimulator,
    *,
    trial: int = 0,
    max_steps: int = DEFAULT_MAX_STEPS,
    max_tool_calls_per_turn: int | None = None,
    session: SessionContext | None = None,
    env: Env | None = None,
) -> ScoredEpisode:
    """Run `task` with `adapter` and `user` and score it (no reward if it errored)."""
    env = env or Env(domain, task)
    # Adapters whose agent calls tools over the network (server-side tools) serve this Env.
    if session is None:
        session = session_for(domain, task, task_id, trial, metadata={"env": env})
    else:
        session.metadata.setdefault("env", env)
    result = await run_episode(
        adapter,
        env,
        user,
        session,
        task.instruction,
        max_steps=max_steps,
        max_tool_calls_per_turn=max_tool_calls_per_turn,
    )
    reward = None if result.error is not None else env.reward()
    if reward is not None and result.stop_reason == "max_steps":
        # The original only scored episodes that ended (user stop, terminate tool); one
        # cut off by max steps kept reward 0. The DB comparison is still recorded.
        reward.reward = 0.0
        reward.unfinished = True
    return ScoredEpisode(task_id=task_id, trial=trial, result=result, reward=reward, env=env)
