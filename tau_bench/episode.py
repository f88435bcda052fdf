"""One benchmark episode: a fresh environment, the conversation loop, and the reward.

Suite-agnostic: the domain (`tau_bench.suites.Domain`) makes the environment and the
environment scores it. The one rule every driver shares - an episode cut off by the step
limit is unfinished and scores 0, as in the original - lives in `score_episode`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tau_adapters.conversation import DEFAULT_MAX_STEPS, MAX_STEPS
from tau_adapters.loop import EpisodeResult, run_episode
from tau_adapters.protocol import AgentAdapter, SessionContext, UserSimulator
from tau_bench.suites import Domain, EpisodeEnv, Reward
from tau_bench.tau3.judge import JudgeError

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


class ScoringError(Exception):
    """Scoring a finished conversation failed (the τ³ NL judge, the evaluator): the
    episode is an error - never a reward - but its trajectory and usage are kept.

    `partial_episode`: the ScoredEpisode with no reward; `judge_usage`: what the failed
    judge calls cost (a `JudgeError`'s `usage`). `kind` and `retryable` are the cause's, and
    the message is its message: `records.record_from_exception` records the error as the
    cause's, with the episode's trajectory, agent, user and judge usage (the money was
    spent), so the cost table counts it and `--resume` still re-runs the episode."""

    source = "scoring"

    def __init__(self, episode: ScoredEpisode, cause: Exception) -> None:
        super().__init__(str(cause) or type(cause).__name__)
        self.partial_episode = episode
        self.cause = cause
        self.kind = getattr(cause, "kind", type(cause).__name__)
        self.retryable = bool(getattr(cause, "retryable", False))
        usage = getattr(cause, "usage", None)
        self.judge_usage: dict[str, Any] = dict(usage) if isinstance(usage, dict) else {}

    @staticmethod
    def of(episode: ScoredEpisode, cause: Exception) -> ScoringError:
        """The error for `cause`: a `JudgeError` too when the judge failed, so callers of
        `run_task` that catch `JudgeError` still do."""
        if isinstance(cause, JudgeError):
            return JudgingError(episode, cause)
        return ScoringError(episode, cause)


class JudgingError(ScoringError, JudgeError):
    """The τ³ NL judge failed after the conversation (see `ScoringError`)."""

    source = "judge"

    def __init__(self, episode: ScoredEpisode, cause: Exception) -> None:
        super().__init__(episode, cause)
        self.usage = self.judge_usage


class JudgeDeadlineError(JudgeError):
    """The episode's deadline expired while the judge scored the finished conversation
    (see `judge_cut_off`): a harness error (`source: judge`) that `--resume` re-runs."""

    kind = "judge_timeout"
    retryable = True


def judge_cut_off(episode: ScoredEpisode, seconds: float) -> JudgingError:
    """The error of an episode whose judge the episode deadline (`seconds`,
    `--episode-timeout`) cut off: it keeps the trajectory and the agent's and user's
    usage (`ScoringError`); the judge's spend is unknown (its answered calls were not
    reported; one was under way), so its cost is unknown rather than $0."""
    judge = getattr(getattr(episode.env, "domain", None), "judge_name", None)
    usage: dict[str, Any] = {"model": judge} if isinstance(judge, str) else {}
    cause = JudgeDeadlineError(
        f"the episode deadline expired while judging: no verdict within the episode's "
        f"{seconds:g} s (--episode-timeout)",
        usage={**usage, "calls": 1},
    )
    return JudgingError(episode, cause)


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
    on_scoring: Callable[[ScoredEpisode], None] | None = None,
) -> ScoredEpisode:
    """Run `task` with `adapter` and `user` and score it (no reward if it errored).

    With `tool_host`, the episode's environment is served to the agent for the duration
    of the episode (server-side tools) and the session carries its endpoint.
    `on_scoring` gets the finished, unscored episode before it is scored: what a caller
    whose deadline cuts the scoring off (the judge) records (`judge_cut_off`).
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
    scored = ScoredEpisode(task_id=task_id, trial=trial, result=result, reward=None, env=env)
    if result.error is None:
        if on_scoring is not None:
            on_scoring(scored)
        try:
            scored.reward = await _scored(env, result)
        except Exception as exc:
            raise ScoringError.of(scored, exc) from exc
    return scored


async def _scored(env: EpisodeEnv, result: EpisodeResult) -> Reward:
    """The reward of a finished conversation, after an asynchronous judge if any."""
    prepare = getattr(env, "prepare_reward", None)
    if prepare is not None:  # an asynchronous judge (τ³ NL assertions)
        _finish(env, result.stop_reason, result.messages)
        await prepare()
    return score_episode(env, result.stop_reason, result.messages)
