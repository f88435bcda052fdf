"""The τ² results file (`results.json` of `tau2 run`) as pydantic models: field names and
types only, written from the upstream data model at the pinned commit.

Why: `tau rescore --env tau3/<domain>` reads these files and `tau export --format tau2`
writes them; validating both sides against one model of the upstream schema is what
makes an export acceptable to `tau2 view`, `tau2 evaluate-trajs` and `tau2 submit
prepare`. Required fields are required here too; fields we do not use are kept as
`extra` so a rescored file loses nothing. Tasks are validated with the τ³ task model.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from tau_bench.tau3.message_schema import (
    Message,
    OpenModel,
    ParticipantMessage,
    ToolMessage,
)
from tau_bench.tau3.tasks import RewardType, Task

__all__ = [
    "TERMINATION_REASONS",
    "AgentInfo",
    "EnvironmentInfo",
    "Info",
    "ParticipantMessage",
    "Results",
    "RewardInfo",
    "SimulationRun",
    "ToolMessage",
    "UserInfo",
]

TerminationReason = Literal[
    "user_stop",
    "agent_stop",
    "max_steps",
    "timeout",
    "too_many_errors",
    "agent_error",
    "user_error",
    "infrastructure_error",
    "context_window_exceeded",
    "unexpected_error",
]
TERMINATION_REASONS: tuple[str, ...] = get_args(TerminationReason)


class DBCheck(OpenModel):
    db_match: bool
    db_reward: float


class RewardInfo(OpenModel):
    reward: float
    db_check: DBCheck | None = None
    env_assertions: list[dict[str, Any]] | None = None
    action_checks: list[dict[str, Any]] | None = None
    nl_assertions: list[dict[str, Any]] | None = None
    communicate_checks: list[dict[str, Any]] | None = None
    reward_basis: list[RewardType] | None = None
    reward_breakdown: dict[RewardType, float] | None = None
    info: dict[str, Any] | None = None


class SimulationRun(OpenModel):
    id: str
    task_id: str
    timestamp: str | None = None
    start_time: str
    end_time: str
    duration: float
    termination_reason: TerminationReason
    agent_cost: float | None = None
    user_cost: float | None = None
    reward_info: RewardInfo | None = None
    messages: list[Message] | None = None
    ticks: list[dict[str, Any]] | None = None
    trial: int | None = None
    seed: int | None = None
    mode: str = "half_duplex"
    info: dict[str, Any] | None = None


class AgentInfo(OpenModel):
    implementation: str
    llm: str | None = None
    llm_args: dict[str, Any] | None = None


class UserInfo(OpenModel):
    implementation: str
    llm: str | None = None
    llm_args: dict[str, Any] | None = None
    global_simulation_guidelines: str | None = None


class EnvironmentInfo(OpenModel):
    domain_name: str
    policy: str
    tool_defs: dict[str, Any] | None = None


class Info(OpenModel):
    git_commit: str
    num_trials: int
    max_steps: int
    max_errors: int
    user_info: UserInfo
    agent_info: AgentInfo
    environment_info: EnvironmentInfo
    seed: int | None = None


class Results(OpenModel):
    timestamp: str | None = None
    info: Info
    tasks: list[dict[str, Any]]
    simulations: list[SimulationRun] = Field(default_factory=list)

    @field_validator("tasks")
    @classmethod
    def _tasks_are_tasks(cls, tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for task in tasks:
            Task.model_validate(task)  # id, user_scenario, criteria shaped as upstream
        return tasks

    @model_validator(mode="after")
    def _each_once(self) -> Results:
        """A task or simulation listed twice would be counted twice in every average."""
        seen: set[object] = set()
        for key in (
            *(("task", str(t["id"])) for t in self.tasks),
            *(("simulation", s.id) for s in self.simulations),
            *(("trial", s.task_id, s.trial) for s in self.simulations if s.trial is not None),
        ):
            if key in seen:
                what = {"task": "task id", "simulation": "simulation id"}.get(str(key[0]))
                raise ValueError(
                    f"{what} {key[1]!r} appears twice"
                    if what
                    else f"task {key[1]!r} trial {key[2]} appears twice"
                )
            seen.add(key)
        return self

    def task_ids(self) -> set[str]:
        return {str(t["id"]) for t in self.tasks}
