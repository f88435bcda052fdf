"""The NL_ASSERTION judge seam: an interface, an `assume-met` judge, a verdict parser.

The original asks an LLM whether the trajectory satisfies each natural-language
assertion. The lead plugs an LLM judge in by implementing `NLJudge`; `AssumeMetJudge`
marks every assertion met and says so in each justification (used by the conformance
test, which compares against the original's reward "if NL passes"). A judge that fails
or answers something unparseable must raise `JudgeError`: the evaluator never turns a
judge problem into a pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from tau_adapters import jsonsafe
from tau_bench.tau3.messages import Message

__all__ = ["AssumeMetJudge", "JudgeError", "NLCheck", "NLJudge", "parse_verdict", "render"]


class JudgeError(RuntimeError):
    """The judge failed or its verdict could not be read: the evaluation has no reward.

    `usage`: what the failed judge calls cost (`model`, tokens, cost, calls; empty when
    unknown), so that the episode's error record still counts the money spent."""

    def __init__(self, message: str = "", *, usage: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.usage: dict[str, Any] = dict(usage or {})


@dataclass(frozen=True)
class NLCheck:
    nl_assertion: str
    met: bool
    justification: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "nl_assertion": self.nl_assertion,
            "met": self.met,
            "justification": self.justification,
        }


class NLJudge(Protocol):
    """Judges NL assertions over a trajectory; raises `JudgeError` when it cannot."""

    def judge(self, trajectory: list[Message], assertions: list[str]) -> list[NLCheck]: ...


class AssumeMetJudge:
    """Marks every assertion met, without judging; the justification says so."""

    name = "assume-met"

    def judge(self, trajectory: list[Message], assertions: list[str]) -> list[NLCheck]:
        return [
            NLCheck(a, True, "assumed met: no NL judge was run (assume-met judge)")
            for a in assertions
        ]


def render(trajectory: list[Message]) -> str:
    """The trajectory as the original shows it to the judge: `<role>: <content>` lines."""
    return "\n".join(f"{m.role}: {m.content}" for m in trajectory)


def parse_verdict(text: str) -> list[NLCheck]:
    """A judge answer `{"results": [{expectedOutcome, reasoning, metExpectation}]}` → checks.

    Anything else (not JSON, no list of results, a field missing, a non-bool verdict) is a
    `JudgeError`.
    """
    try:
        data = jsonsafe.loads(text)
        results = data["results"]
        if not isinstance(results, list):
            raise TypeError("results is not a list")
        checks = []
        for r in results:
            met = r["metExpectation"]
            if not isinstance(met, bool):
                raise TypeError(f"metExpectation is {type(met).__name__}, not bool")
            checks.append(NLCheck(str(r["expectedOutcome"]), met, str(r["reasoning"])))
        return checks
    except (ValueError, KeyError, TypeError) as exc:
        raise JudgeError(f"unparseable NL judge verdict: {exc}") from exc
