"""The benchmark's own solvability check: replay each task's ground truth as an agent.

For every task: fresh Env, each ground-truth action executed as an agent tool call
(a terminate tool ends the episode), then one reply that states the task's outputs;
the reward must be 1.0. This is exactly the oracle agent with a user who lets it talk,
without the conversation machinery, so it is fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tau_bench.agents.oracle import outputs_message
from tau_bench.env import Env
from tau_bench.scoring import RewardResult
from tau_bench.tasks import RESPOND_ACTION, Task

if TYPE_CHECKING:
    from tau_bench.domains import Domain


@dataclass
class VerifiedTask:
    task_id: int
    actions: int
    errors: int
    reward: RewardResult


def verify_task(domain: Domain, task: Task, task_id: int) -> VerifiedTask:
    env = Env(domain, task)
    errors = 0
    terminated = False
    for action in task.actions:
        if action.name == RESPOND_ACTION:
            env.respond(str(action.kwargs.get("content", "")))
            continue
        if env.is_terminate(action.name):
            env.respond(outputs_message(task.outputs))
            env.execute(action.name, action.kwargs)
            terminated = True
            break
        if env.execute(action.name, action.kwargs).is_error:
            errors += 1
    if not terminated:
        env.respond(outputs_message(task.outputs))
    return VerifiedTask(task_id, len(task.actions), errors, env.reward())


def verify_tasks(
    domain: Domain, tasks: list[Task], ids: list[int] | None = None
) -> list[VerifiedTask]:
    chosen = ids if ids is not None else list(range(len(tasks)))
    return [verify_task(domain, tasks[i], i) for i in chosen]
