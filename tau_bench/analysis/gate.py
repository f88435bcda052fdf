"""The regression gate of a bot team's CI: `tau compare --gate BASE NEW --max-drop D`.

NEW fails when it is worse than BASE by more than D with the paired bootstrap's
confidence: the whole interval of (NEW - BASE) lies below -D. An interval that reaches
below -D without lying wholly below it passes but is called inconclusive, with the
trials per task that would make the interval's half-width D at the observed variance
(`tau_bench.analysis.variance.trials_needed`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tau_bench.analysis.compare import Comparison, Paired
from tau_bench.analysis.variance import TrialsNeeded, rewards_by_task, trials_needed

GATE_FAILED_EXIT = 1


TWO_RUNS = "--gate compares exactly two runs: BASE NEW"


class GateError(ValueError):
    """The gate cannot be evaluated as asked (the message says why)."""


@dataclass(frozen=True)
class GateResult:
    paired: Paired
    max_drop: float
    trials: TrialsNeeded | None

    @property
    def failed(self) -> bool:
        return self.paired.high < -self.max_drop

    @property
    def inconclusive(self) -> bool:
        return not self.failed and self.paired.low < -self.max_drop

    def lines(self) -> list[str]:
        p = self.paired
        ci = f"{p.confidence:.0%} CI of NEW - BASE [{p.low:+.3f}, {p.high:+.3f}]"
        if self.failed:
            head = (
                f"gate: FAIL: {p.other} is worse than {p.baseline} by more than "
                f"{self.max_drop:g} ({p.diff:+.3f}, {ci}, on {p.tasks} tasks)"
            )
        elif self.inconclusive:
            head = (
                f"gate: pass (inconclusive): {p.other} vs {p.baseline} {p.diff:+.3f}, {ci}: "
                f"a drop larger than {self.max_drop:g} is not ruled out"
            )
        else:
            head = (
                f"gate: pass: {p.other} vs {p.baseline} {p.diff:+.3f}, {ci}: "
                f"no drop larger than {self.max_drop:g}"
            )
        return [head] + ([f"gate: {self.trials.text()}"] if self.trials else [])

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_drop": self.max_drop,
            "failed": self.failed,
            "inconclusive": self.inconclusive,
            "paired": self.paired.to_dict(),
            "trials_needed": self.trials.to_dict() if self.trials else None,
        }


def evaluate_gate(comparison: Comparison, max_drop: float) -> GateResult:
    """The gate on a comparison of exactly two runs, BASE first (the baseline)."""
    if len(comparison.rows) != 2 or len(comparison.runs) != 2:
        raise GateError(TWO_RUNS)
    if not (math.isfinite(max_drop) and 0 <= max_drop <= 1):  # rewards are from 0 to 1
        raise GateError(
            f"--max-drop must be a number from 0 to 1 (a drop in mean reward, e.g. 0.05), "
            f"not {max_drop}"
        )
    if not comparison.paired:
        raise GateError("--gate: the two runs have no scored task in common")
    paired = comparison.paired[0]
    keep = set(comparison.task_ids)
    base_run, new_run = comparison.runs
    if paired.baseline != base_run.label:
        base_run, new_run = new_run, base_run
    base = rewards_by_task(r for r in base_run.records if r.task_id in keep)
    new = rewards_by_task(r for r in new_run.records if r.task_id in keep)
    trials = trials_needed(base, new, half_width=max_drop, confidence=paired.confidence)
    return GateResult(paired=paired, max_drop=max_drop, trials=trials)
