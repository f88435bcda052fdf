"""Stage 2: run a proposed action sequence on a fresh episode and decide if it is a task.

Each action is checked (tool name, argument schema, data and policy constraints on the
episode's current state) and then executed on a private episode environment of the
target's suite (v1's `Env`, or a τ³ environment). The sequence is rejected
when any action fails a check or returns an error (read-only ones too: a ground truth
that looks up nothing useful teaches nothing), when a terminate tool is not last, when
the number of actions misses the difficulty's range, or when the final DB hash equals
the initial one. Checking stops at the first action that fails: what follows it would
run on a state the task never reaches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tau_bench.sdg.answers import ProposedAction
from tau_bench.sdg.constraints import check_action
from tau_bench.sdg.difficulty import Difficulty
from tau_bench.sdg.problems import DIFFICULTY_MISMATCH, NO_CHANGE, POLICY, TOOL_ERROR, Problem
from tau_bench.sdg.schema_check import check_call, schemas_by_name
from tau_bench.sdg.targets import SandboxEnv, Target, as_target

OBSERVATION_CHARS = 300  # kept per action in the provenance record


@dataclass
class ExecutedAction:
    name: str
    kwargs: dict[str, Any]
    observation: str
    writes: bool


@dataclass
class Validation:
    """The sandbox's verdict on one proposed sequence."""

    ok: bool
    problems: list[Problem]
    executed: list[ExecutedAction]
    count: int
    writes: int
    initial_hash: str
    final_hash: str

    @property
    def reason(self) -> str | None:
        return self.problems[0].reason if self.problems else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "reason": self.reason,
            "problems": [p.to_dict() for p in self.problems],
            "actions": self.count,
            "writes": self.writes,
            "initial_hash": self.initial_hash,
            "final_hash": self.final_hash,
            "observations": [
                {"name": a.name, "observation": a.observation[:OBSERVATION_CHARS]}
                for a in self.executed
            ],
        }


@dataclass
class Sandbox:
    """Validates sequences for one domain (a suite domain or a `Target`); cheap to reuse
    (a fresh episode environment per sequence)."""

    domain: Any
    target: Target = field(init=False)
    _schemas: dict[str, dict[str, Any]] = field(init=False)

    def __post_init__(self) -> None:
        self.target = as_target(self.domain)
        self._schemas = schemas_by_name(self.target.tool_schemas)
        self._schemas = {n: s for n, s in self._schemas.items() if n in self.target.tool_names}

    def validate(
        self, user_id: str, actions: Sequence[ProposedAction], difficulty: Difficulty
    ) -> Validation:
        env = self.target.sandbox_env()
        initial = env.data_hash()
        problems: list[Problem] = []
        executed: list[ExecutedAction] = []
        for index, action in enumerate(actions):
            found = self._check(env, user_id, index, action, last=index == len(actions) - 1)
            if found:
                problems += found
                break
            output = env.execute(action.name, action.kwargs)
            observation = output.content
            writes = action.name in self.target.writes
            executed.append(ExecutedAction(action.name, dict(action.kwargs), observation, writes))
            if output.is_error:
                problems.append(Problem(TOOL_ERROR, f"{action.name}: {observation}", index))
                break
        if not difficulty.accepts(len(actions)):
            problems.append(
                Problem(
                    DIFFICULTY_MISMATCH,
                    f"{len(actions)} actions, but {difficulty.value} tasks have "
                    f"{difficulty.describe()} (read-only actions count)",
                )
            )
        final = env.data_hash()
        if not problems and final == initial:
            problems.append(Problem(NO_CHANGE, "the actions leave the database unchanged"))
        return Validation(
            ok=not problems,
            problems=problems,
            executed=executed,
            count=len(actions),
            writes=sum(1 for a in executed if a.writes),
            initial_hash=initial,
            final_hash=final,
        )

    def _check(
        self, env: SandboxEnv, user_id: str, index: int, action: ProposedAction, *, last: bool
    ) -> list[Problem]:
        problems = check_call(self._schemas, index, action.name, action.kwargs)
        if problems:
            return problems
        if env.is_terminate(action.name) and not last:
            return [Problem(POLICY, f"{action.name} ends the conversation: only last", index)]
        return check_action(self.target.env, env.db, user_id, index, action.name, action.kwargs)
