"""One τ³ episode behind the suite seam: tools, the τ³ trajectory, and its evaluation.

`Tau3Env` wraps a core `tau_bench.tau3.environment.Environment` with the task's initial
state applied (initialization data and actions, message-history replay). It records what
happens as the original's trajectory: the task's history (or the agent greeting), each
tool call with its exact tool message (`error` flag included), each agent text. When the
conversation ends, `finish(stop_reason, messages)` rebuilds the trajectory from the
conversation (user turns included, for the NL judge) and maps the stop reason to the
original's termination reason; `reward()` runs the τ³ evaluator.

The original's loop never ends on a tool (`transfer_to_human_agents` does not stop it);
it ends after `max_errors` (10) error tool messages (`too_many_errors`), which is what
`is_terminate` reports.
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tau_adapters.protocol import ToolOutput
from tau_bench.suites.tau3_trajectory import LoggedCall, rebuild
from tau_bench.tau3.environment import Environment
from tau_bench.tau3.evaluator import Evaluation, evaluate
from tau_bench.tau3.judge import JudgeError, NLCheck
from tau_bench.tau3.messages import Message, ToolCall
from tau_bench.tau3.replay import GREETING
from tau_bench.tau3.tasks import Task

if TYPE_CHECKING:
    from tau_bench.suites.tau3 import Tau3Domain

__all__ = ["MAX_ERRORS", "Tau3Env", "Tau3Reward", "Tau3Task", "termination_reason"]

MAX_ERRORS = 10
_TERMINATION = {
    "user_stop": "user_stop",
    "agent_end": "agent_stop",
    "agent_handoff": "agent_stop",
    "terminate_tool": "agent_stop",
    "max_steps": "max_steps",
    "max_user_turns": "max_steps",
    "error": "agent_error",
}


def termination_reason(stop_reason: str, too_many_errors: bool = False) -> str:
    """The original's termination reason for one of our conversation stop reasons."""
    if too_many_errors:
        return "too_many_errors"
    return _TERMINATION.get(stop_reason, stop_reason or "agent_error")


@dataclass(frozen=True)
class _ActionView:
    """An expected action as the oracle agent reads it (`name`, `kwargs`)."""

    name: str
    kwargs: dict[str, Any]
    requestor: str = "assistant"


@dataclass(frozen=True)
class Tau3Task:
    """A τ³ task as the harness sees it (`tau_bench.suites.base.Task`)."""

    task: Task

    @property
    def id(self) -> str:
        return self.task.id

    @property
    def instruction(self) -> str:
        """The user scenario (persona, instructions) as the original shows it to its user
        simulator; the scripted user says it as its first message."""
        from tau_bench.tau3.user_scenario import render_scenario

        return render_scenario(self.task)

    @property
    def user_id(self) -> str | None:
        return None

    @property
    def actions(self) -> list[_ActionView]:
        """The agent's expected actions (the oracle plays these)."""
        return [
            _ActionView(a.name, dict(a.arguments))
            for a in self.task.expected_actions
            if a.requestor == "assistant"
        ]

    @property
    def needs_judge(self) -> bool:
        """Whether scoring it asks the NL judge (its reward basis has NL assertions)."""
        crit = self.task.evaluation_criteria
        return "NL_ASSERTION" in self.task.reward_basis and bool(crit and crit.nl_assertions)

    @property
    def user_tool_names(self) -> list[str] | None:
        """The user tools this task allows (the original's `Task.user_tools`; None: all)."""
        return self.task.user_tools

    @property
    def user_actions(self) -> list[_ActionView]:
        """The user's expected actions (dual control: what the scripted user performs)."""
        return [a for a in self.action_plan if a.requestor == "user"]

    @property
    def action_plan(self) -> list[_ActionView]:
        """Every expected action in order, each with its requestor (the oracle follows it:
        its own calls it makes, the user's it asks the user for)."""
        return [
            _ActionView(a.name, dict(a.arguments), "user" if a.requestor == "user" else "assistant")
            for a in self.task.expected_actions
        ]

    @property
    def outputs(self) -> list[str]:
        crit = self.task.evaluation_criteria
        return list(crit.communicate_info or []) if crit is not None else []

    @property
    def oracle_message(self) -> str | None:
        """What the original's replay says last (None: it says nothing), then it stops."""
        outputs = self.outputs
        return "To summarise: " + " ; ".join(outputs) if outputs else None

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        return dict(self.task.raw) if self.task.raw else self.task.model_dump(**kwargs)


@dataclass
class Tau3Reward:
    """The evaluator's result: reward, RewardInfo-shaped details, a readable failure diff."""

    reward: float
    evaluation: Evaluation
    termination_reason: str
    judge: str
    unfinished: bool = False
    judge_usage: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        ev = self.evaluation
        return {
            "reward": self.reward,
            "reward_info": ev.to_dict(),
            "components": dict(ev.reward_breakdown or {}),
            "failures": list(ev.failures),
            "failure_report": ev.failure_report(),
            "termination_reason": self.termination_reason,
            "judge": self.judge,
            "nl_assumed_met": self.judge == "assume-met" and ev.nl_assertions is not None,
            "judge_usage": dict(self.judge_usage),
            "gold_hashes": ev.gold_hashes,
            "predicted_hashes": ev.predicted_hashes,
        }


class _UserExecutor:
    """The user's side of a dual-control episode: its tool calls carry requestor `user`."""

    def __init__(self, env: Tau3Env) -> None:
        self._env = env

    def execute(self, name: str, kwargs: Any) -> ToolOutput:
        return self._env.execute(name, kwargs, requestor="user")

    def is_terminate(self, name: str) -> bool:
        return self._env.is_terminate(name)

    def respond(self, content: str) -> None:
        return None


class Tau3Env:
    """One τ³ episode's environment (`tau_bench.suites.base.EpisodeEnv`)."""

    def __init__(
        self, domain: Tau3Domain, task: Tau3Task | None = None, *, deterministic_ids: bool = False
    ) -> None:
        self.domain = domain
        self.task = task
        self.env = Environment(domain.loaded, deterministic_ids=deterministic_ids)
        self.history: list[Message] = []
        if task is not None:
            self.history = task.task.history()
            state = task.task.initial_state
            self.env.set_state(
                state.initialization_data if state else None,
                state.initialization_actions if state else None,
                self.history,
            )
        start = list(self.history) or [Message(role="assistant", content=GREETING)]
        self.trajectory: list[Message] = start
        self._log: list[LoggedCall] = []
        self._agent_texts = 0  # `respond` calls so far: where a logged call happened
        self.errors = 0
        self.stop_reason = ""
        self._nl_checks: list[NLCheck] | None = None
        self._judge_usage: dict[str, Any] = {}

    # -- the executor ------------------------------------------------------------------
    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        return self.domain.tool_schemas

    def is_terminate(self, name: str) -> bool:
        """True once `MAX_ERRORS` tool messages were errors (the original's max_errors)."""
        return self.errors >= MAX_ERRORS

    def execute(self, name: str, kwargs: Any, requestor: str = "assistant") -> ToolOutput:
        """Run a tool call as the original's `get_response`; never raises."""
        arguments = kwargs if isinstance(kwargs, dict) else {}
        call = ToolCall(
            id=f"call_{len(self._log)}", name=str(name), arguments=arguments, requestor=requestor
        )
        if not isinstance(kwargs, dict):
            result = Message(
                role="tool",
                content=f"Error: tool arguments must be a JSON object, got {kwargs!r}",
                id=call.id,
                requestor=requestor,
                error=True,
            )
        else:
            result = self.env.get_response(call).to_message()
        ran = isinstance(kwargs, dict)
        self._log.append(LoggedCall(call, result, self._agent_texts, ran))
        self.errors += bool(result.error)
        if ran:
            role = "user" if requestor == "user" else "assistant"
            self.trajectory.append(Message(role=role, content=None, tool_calls=[call]))
            self.trajectory.append(result)
        return ToolOutput(result.content or "", is_error=result.error)

    def user_executor(self) -> _UserExecutor:
        """The executor for the user's own tools (dual control: telecom, mock)."""
        return _UserExecutor(self)

    def respond(self, content: str) -> None:
        self._agent_texts += 1
        if content and content.strip():
            self.trajectory.append(Message(role="assistant", content=content))

    def data_hash(self) -> str:
        return self.env.agent_db_hash() or ""

    def user_data_hash(self) -> str | None:
        return self.env.user_db_hash()

    # -- the end of the conversation ---------------------------------------------------
    def finish(self, stop_reason: str, messages: list[dict[str, Any]] | None = None) -> None:
        """The conversation is over: rebuild the τ³ trajectory from it and keep why it ended."""
        self.stop_reason = stop_reason
        if messages:
            self.trajectory = self._from_conversation(messages)

    def _from_conversation(self, messages: list[dict[str, Any]]) -> list[Message]:
        """Every call in its place, server-side ones too (`tau3_trajectory`)."""
        start = list(self.history) or [Message(role="assistant", content=GREETING)]
        return rebuild(start, self._log, messages)

    @property
    def termination(self) -> str:
        return termination_reason(self.stop_reason, self.errors >= MAX_ERRORS)

    def _needs_judge(self) -> bool:
        if self.task is None or "NL_ASSERTION" not in self.task.task.reward_basis:
            return False
        crit = self.task.task.evaluation_criteria
        return bool(crit and crit.nl_assertions) and self.termination in (
            "agent_stop",
            "user_stop",
        )

    async def prepare_reward(self) -> None:
        """Ask an asynchronous (LLM) judge before `reward()`, outside the sync evaluator."""
        judge = self.domain.judge
        ajudge = getattr(judge, "ajudge", None)
        if ajudge is None or not self._needs_judge():
            return
        assert self.task is not None
        crit = self.task.task.evaluation_criteria
        assert crit is not None
        checks, usage = await ajudge(self.trajectory, list(crit.nl_assertions or []))
        self._nl_checks, self._judge_usage = checks, usage

    def reward(self) -> Tau3Reward:
        """Score the episode with the τ³ evaluator; a judge problem raises `JudgeError`."""
        if self.task is None:
            raise ValueError("reward needs a task: pass one to new_env(task)")
        judge: Any = self.domain.judge
        if self._nl_checks is not None:
            judge = _Precomputed(self._nl_checks)
        elif getattr(judge, "ajudge", None) is not None and self._needs_judge():
            self._nl_checks, self._judge_usage = _run_sync(judge, self.trajectory, self.task)
            judge = _Precomputed(self._nl_checks)
        ev = evaluate(
            self.domain.loaded, self.task.task, self.trajectory, self.termination, judge=judge
        )
        return Tau3Reward(
            reward=ev.reward,
            evaluation=ev,
            termination_reason=self.termination,
            judge=self.domain.judge_name,
            judge_usage=dict(self._judge_usage),
        )


class _Precomputed:
    """The checks an asynchronous judge already gave for this trajectory."""

    def __init__(self, checks: list[NLCheck]) -> None:
        self.checks = checks

    def judge(self, trajectory: list[Message], assertions: list[str]) -> list[NLCheck]:
        return self.checks


JUDGE_DEADLINE = 900.0


def _run_sync(judge: Any, trajectory: list[Message], task: Tau3Task) -> Any:
    """An async judge from synchronous code (the gym): on its own loop and thread."""
    crit = task.task.evaluation_criteria
    assert crit is not None
    assertions = list(crit.nl_assertions or [])
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(asyncio.run, judge.ajudge(trajectory, assertions))
        try:
            return future.result(timeout=JUDGE_DEADLINE)
        except TimeoutError as exc:
            raise JudgeError(f"NL judge gave no verdict within {JUDGE_DEADLINE:.0f} s") from exc


def observation_line(env: Tau3Env, output: ToolOutput) -> str:
    """One `tau env exec` output line."""
    return json.dumps(
        {
            "observation": output.content,
            "error": output.is_error,
            "data_hash": env.data_hash(),
            "user_data_hash": env.user_data_hash(),
        }
    )
