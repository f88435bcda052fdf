"""Is a τ³ task a valid generated task? Its ground truth, replayed, must prove it.

The replay is `tau tasks verify`'s (`Tau3Domain.verify`: the task's initial state, each
expected action on the live environment, the communicate message, the τ³ evaluator) with
every NL assertion assumed met. A task passes when no expected action answers an error,
the replay scores 1.0, and - when DB is in its reward basis - the actions change the DB
(agent's or user's): otherwise doing nothing scores as well as doing the task. Tasks that
fail in the original too (`tau_bench.tau3.known_failing`) are reported as known issues.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tau_bench.sdg.problems import NO_CHANGE, TOOL_ERROR, UNVERIFIED, Problem
from tau_bench.suites.tau3 import ASSUME_MET, Tau3Domain, VerifiedTau3, make_judge
from tau_bench.suites.tau3_env import Tau3Task
from tau_bench.tau3.known_failing import known_failing

__all__ = ["TaskCheck", "check_tasks", "report"]

OBSERVATION_CHARS = 200
MAX_LISTED = 3  # evaluator failures quoted per task


@dataclass
class TaskCheck:
    """One task's verdict: its problems (none: valid) and the replay's reward."""

    index: int
    task_id: str
    reward: float | None
    problems: list[Problem] = field(default_factory=list)
    known_issue: str | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


def _problems(verified: VerifiedTau3) -> list[Problem]:
    replay = verified.replay
    out = [
        Problem(TOOL_ERROR, f"{s.call.name}: {(s.result.content or '')[:OBSERVATION_CHARS]}", i)
        for i, s in enumerate(replay.steps)
        if s.result.error
    ]
    if verified.error is not None:
        out.append(Problem(UNVERIFIED, f"the replay cannot be evaluated: {verified.error}"))
    elif verified.reward is not None and verified.reward.reward != 1.0:
        failures = verified.reward.evaluation.failures[:MAX_LISTED]
        why = ("; ".join(" ".join(f.split()) for f in failures)) or "no detail"
        out.append(
            Problem(UNVERIFIED, f"replaying the task scores {verified.reward.reward}: {why}")
        )
    replayed = bool(replay.initial_hashes)  # empty when the initial state could not apply
    if (
        replayed
        and "DB" in verified.task.task.reward_basis
        and replay.initial_hashes == replay.final_hashes
    ):
        out.append(
            Problem(NO_CHANGE, "the actions leave the DB unchanged, yet DB is in the reward basis")
        )
    return out


def check_tasks(domain: Tau3Domain, tasks: Sequence[Tau3Task]) -> list[TaskCheck]:
    """Replay and judge every task (NL assertions assumed met)."""
    judged = domain.with_judge(make_judge(ASSUME_MET))
    known = known_failing(domain.loaded.name)
    out = []
    for verified in judged.verify(tasks, with_hashes=True):
        problems = _problems(verified)
        reward = None if verified.reward is None else verified.reward.reward
        task_id = verified.task.id
        issue = known.get(task_id) if problems else None
        out.append(TaskCheck(verified.task_id, task_id, reward, problems, issue))
    return out


def report(checks: Sequence[TaskCheck]) -> dict[str, Any]:
    """The checks as `tau sdg stats`' `verification` section."""
    failed = [c for c in checks if c.problems and c.known_issue is None]
    known = [c for c in checks if c.known_issue is not None]
    return {
        "checked": len(checks),
        "passed": sum(1 for c in checks if c.ok),
        "failed": [c.index for c in failed],
        "judge": ASSUME_MET,
        "by_reason": dict(Counter(p.reason for c in failed for p in c.problems).most_common()),
        "problems": {
            str(c.index): {"id": c.task_id, "problems": [p.describe() for p in c.problems]}
            for c in failed
        },
        "known_issues": {str(c.index): {"id": c.task_id, "issue": c.known_issue} for c in known},
    }
