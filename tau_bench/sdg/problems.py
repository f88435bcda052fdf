"""Why a generated scenario was rejected: reason codes and one problem record.

The reasons, in the order a sequence is checked:
  malformed            the model's answer was not the JSON asked for, twice
  unknown_tool         an action names no tool of the domain
  bad_arguments        arguments do not match the tool's schema (or obvious formats)
  invalid_reference    an id, flight, date, route, cabin or payment method that does not
                       exist, is not the user's, or is not available
  policy               the domain policy forbids the action (e.g. changing basic economy)
  tool_error           the tool itself answered an error in the sandbox
  difficulty_mismatch  the number of actions is outside the difficulty's range
  no_change            the sequence leaves the database as it was
  bad_instruction      the instruction failed its checks twice (leaks ids, ungrounded
                       outputs, does not identify the user)
  unverified           the finished task does not score 1.0 when replayed (a bug guard)
  llm_error            the model call failed for good
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MALFORMED = "malformed"
UNKNOWN_TOOL = "unknown_tool"
BAD_ARGUMENTS = "bad_arguments"
INVALID_REFERENCE = "invalid_reference"
POLICY = "policy"
TOOL_ERROR = "tool_error"
DIFFICULTY_MISMATCH = "difficulty_mismatch"
NO_CHANGE = "no_change"
BAD_INSTRUCTION = "bad_instruction"
UNVERIFIED = "unverified"
LLM_ERROR = "llm_error"

REASONS = (
    MALFORMED,
    UNKNOWN_TOOL,
    BAD_ARGUMENTS,
    INVALID_REFERENCE,
    POLICY,
    TOOL_ERROR,
    DIFFICULTY_MISMATCH,
    NO_CHANGE,
    BAD_INSTRUCTION,
    UNVERIFIED,
    LLM_ERROR,
)

# Reasons a `--repair` round may fix: the sequence itself was wrong.
REPAIRABLE = frozenset(
    {
        UNKNOWN_TOOL,
        BAD_ARGUMENTS,
        INVALID_REFERENCE,
        POLICY,
        TOOL_ERROR,
        DIFFICULTY_MISMATCH,
        NO_CHANGE,
    }
)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a proposed sequence; `action` is its 0-based index, if any."""

    reason: str
    message: str
    action: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "message": self.message, "action": self.action}

    def describe(self) -> str:
        where = f"action {self.action + 1}: " if self.action is not None else ""
        return f"{where}{self.message} [{self.reason}]"
