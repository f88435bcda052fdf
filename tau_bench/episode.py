"""One benchmark episode: a fresh environment, the conversation loop, and the reward.

Suite-agnostic: the domain (`tau_bench.suites.Domain`) makes the environment and the
environment scores it. The one rule every driver shares - an episode cut off by the step
limit is unfinished and scores 0, as in the original - lives in `score_episode`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tau_adapters.conversation import DEFAULT_MAX_STEPS, MAX_STEPS
from tau_adapters.loop import EpisodeResult, run_episode
from tau_adapters.protocol import AgentAdapter, SessionContext, UserSimulator
from tau_bench.suites import Domain, EpisodeEnv, Reward

if TYPE_CHECKING:
    from tau_bench.toolserver.host import ToolServerHost


@dataclass
class ScoredEpisode:
    task_id: int | str
    trial: int
    result: EpisodeResult
    reward: Reward | None
    env: EpisodeEnv

    @property
    def reward_value(self) -> float:
        return self.reward.reward if self.reward is not None else 0.0


def _finish(env: EpisodeEnv, stop_reason: str, messages: list[dict[str, Any]] | None) -> None:
    finish = getattr(env, "finish", None)
    if finish is not None:
        finish(stop_reason, messages)


def score_episode(
    env: EpisodeEnv, stop_reason: str, messages: list[dict[str, Any]] | None = None
) -> Reward:
    """The environment's reward; 0 (and `unfinished`) when the step limit cut it off.

    The original only scored episodes that ended (user stop, terminate tool); one cut off
    by max steps kept reward 0. The DB comparison is still recorded. An environment with
    the optional `finish` hook (τ³) first learns how the conversation ended.
    """
    _finish(env, stop_reason, messages)
    reward = env.reward()
    if stop_reason == MAX_STEPS:
        reward.reward = 0.0
        reward.unfinished = True
    return reward


def session_for(
    domain: Domain,
    task: Any,
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
        user_id=getattr(task, "user_id", None),
        trial=trial,
        metadata={"terminate_tools": sorted(domain.terminate_tools), **(metadata or {})},
        task=task,
    )


def bind_user(user: UserSimulator, domain: Domain, task: Any, env: EpisodeEnv) -> Any:
    """The user's executor when the domain gives the user tools (τ³ telecom), else None.

    A user simulator with a `bind_episode(task, tools)` hook learns the episode's task and
    the user's tool schemas (an LLM user offers them to its model, the scripted user plays
    the task's user-side actions); the agent's session never carries them. A task whose
    `user_tool_names` is set gets only those tools, as the original's `get_user_tools`."""
    tools = getattr(domain, "user_tool_schemas", None) or []
    only = getattr(task, "user_tool_names", None)  # a task may restrict them (τ³ `user_tools`)
    if only is not None:
        tools = [t for t in tools if t.get("function", {}).get("name") in set(only)]
    make = getattr(env, "user_executor", None)
    executor = make() if tools and make is not None else None
    bind = getattr(user, "bind_episode", None)
    if bind is not None:
        bind(task, list(tools) if executor is not None else [])
    return executor


async def run_task(
    domain: Domain,
    task: Any,
    task_id: int | str,
    adapter: AgentAdapter,
    user: UserSimulator,
    *,
    trial: int = 0,
    max_steps: int = DEFAULT_MAX_STEPS,
    max_tool_calls_per_turn: int | None = None,
    session: SessionContext | None = None,
    env: EpisodeEnv | None = None,
    tool_host: ToolServerHost | None = None,
) -> ScoredEpisode:
    """Run `task` with `adapter` and `user` and score it (no reward if it errored).

    With `tool_host`, the episode's environment is served to the agent for the duration
    of the episode (server-side tools) and the session carries its endpoint.
    """
    env = env or domain.new_env(task)
    session = session or session_for(domain, task, task_id, trial)
    user_executor = bind_user(user, domain, task, env)
    endpoint = tool_host.open(env, domain, task_id) if tool_host is not None else None
    session.tool_endpoint = endpoint
    try:
        result = await run_episode(
            adapter,
            env,
            user,
            session,
            task.instruction,
            max_steps=max_steps,
            max_tool_calls_per_turn=max_tool_calls_per_turn,
            user_executor=user_executor,
        )
    finally:
        if tool_host is not None and endpoint is not None:
            tool_host.release(endpoint)
    reward = None
    if result.error is None:
        prepare = getattr(env, "prepare_reward", None)
        if prepare is not None:  # an asynchronous judge (τ³ NL assertions)
            _finish(env, result.stop_reason, result.messages)
            await prepare()
        reward = score_episode(env, result.stop_reason, result.messages)
    return ScoredEpisode(task_id=task_id, trial=trial, result=result, reward=reward, env=env)
