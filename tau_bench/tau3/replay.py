"""Ground-truth replay of a task (what `tau tasks verify --env tau3/<domain>` runs).

The trajectory is built as the conformance vectors were: the task's message history (or
the agent greeting), then one message per expected action from its requestor carrying
one tool call `call_<i>` followed by the live environment's tool message, then — when
the task has `communicate_info` — a final assistant message `To summarise: a ; b`; the
run ends with `agent_stop`. The live environment's hashes after each step are recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tau_bench.tau3.domain import LoadedDomain
from tau_bench.tau3.environment import Environment, ToolResult
from tau_bench.tau3.evaluator import Evaluation, evaluate
from tau_bench.tau3.judge import NLJudge
from tau_bench.tau3.messages import Message, ToolCall
from tau_bench.tau3.tasks import Task

__all__ = ["GREETING", "Replay", "ReplayStep", "replay_task"]

GREETING = "Hi! How can I help you today?"


@dataclass
class ReplayStep:
    call: ToolCall
    result: ToolResult
    hashes: dict[str, str | None]


@dataclass
class Replay:
    task: Task
    initial_hashes: dict[str, str | None]
    steps: list[ReplayStep] = field(default_factory=list)
    final_hashes: dict[str, str | None] = field(default_factory=dict)
    trajectory: list[Message] = field(default_factory=list)
    communicate_message: str | None = None
    evaluation: Evaluation | None = None
    error: str | None = None

    @property
    def reward(self) -> float | None:
        return None if self.evaluation is None else self.evaluation.reward


def replay_task(
    domain: LoadedDomain,
    task: Task,
    judge: NLJudge | None = None,
    *,
    with_hashes: bool = True,
    evaluate_result: bool = True,
) -> Replay:
    """Replay `task`'s expected actions live and evaluate the resulting trajectory.

    An evaluation that raises (an env assertion helper failing, a judge error) is
    reported in `Replay.error` with no evaluation, never as a reward; so is an initial
    state that cannot be applied (then nothing is replayed: no steps, no hashes).
    """
    env = Environment(domain)
    try:
        history = _set_initial_state(env, task)
    except Exception as exc:  # task data: see `_set_initial_state`
        error = f"initial state: {type(exc).__name__}: {exc}"
        return Replay(task=task, initial_hashes={}, error=error)
    hashes = env.hashes if with_hashes else dict
    out = Replay(task=task, initial_hashes=hashes())
    sync_effects = env.sync_effects
    trajectory = list(history) if history else [Message(role="assistant", content=GREETING)]
    for i, action in enumerate(task.expected_actions):
        call = ToolCall(
            id=f"call_{i}", name=action.name, arguments=action.arguments, requestor=action.requestor
        )
        result = env.get_response(call)
        role = "user" if action.requestor == "user" else "assistant"
        trajectory.append(Message(role=role, content=None, tool_calls=[call]))
        trajectory.append(result.to_message())
        out.steps.append(ReplayStep(call, result, hashes()))
    crit = task.evaluation_criteria
    if crit is not None and crit.communicate_info:
        out.communicate_message = "To summarise: " + " ; ".join(crit.communicate_info)
        trajectory.append(Message(role="assistant", content=out.communicate_message))
    out.final_hashes = hashes()
    out.trajectory = trajectory
    if evaluate_result:
        # The evaluator's gold environment is this task's initial state (built exactly as
        # above) plus the expected actions WITHOUT the post-call sync, exceptions swallowed.
        # If no sync after an action changed anything and no random id was drawn, that is
        # exactly this environment's state (same calls, same order; the sync was a no-op),
        # so it is not rebuilt; otherwise the evaluator builds it.
        same = env.sync_effects == sync_effects and env.ids.drawn == 0
        try:
            out.evaluation = evaluate(
                domain,
                task,
                trajectory,
                "agent_stop",
                judge=judge,
                live_env=env,
                gold_env=env if same else None,
            )
        except Exception as exc:
            out.error = f"{type(exc).__name__}: {exc}"
    return out


def _set_initial_state(env: Environment, task: Task) -> list[Message]:
    """Apply `task`'s initial state to `env`; the message history it starts from.

    The state is task data, so whatever it raises (a history message without a tool name,
    an unknown env function, a history the original rejects, data the DB model refuses,
    nesting too deep to copy) is that task's error, not the command's: `replay_task`
    reports it, and one bad task in a file does not stop the others."""
    history = task.history()
    state = task.initial_state
    env.set_state(
        state.initialization_data if state else None,
        state.initialization_actions if state else None,
        history,
    )
    return history


def summary(replay: Replay) -> dict[str, Any]:
    """A one-line-per-task summary for verify reports."""
    ev = replay.evaluation
    return {
        "task_id": replay.task.id,
        "reward": None if ev is None else ev.reward,
        "error": replay.error,
        "failures": [] if ev is None else ev.failures,
    }
