"""The JSON answers the model must give, as pydantic models, and a lenient JSON reader.

Models wrap JSON in code fences or add a sentence around it; `extract_json` accepts
that, nothing more. Whatever it cannot read is "malformed" and gets one retry.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field


class ProposedAction(BaseModel):
    """One tool call of a proposed scenario (`arguments` is accepted for `kwargs`)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    kwargs: dict[str, Any] = Field(
        default_factory=dict, validation_alias=AliasChoices("kwargs", "arguments")
    )


class ScenarioProposal(BaseModel):
    """Stage 1: a customer-service scenario and the agent's ground-truth tool calls."""

    model_config = ConfigDict(extra="ignore")

    summary: str = Field(min_length=1)
    actions: list[ProposedAction] = Field(min_length=1)


class InstructionDraft(BaseModel):
    """Stage 3: the user simulator's instruction and what the agent must tell the user."""

    model_config = ConfigDict(extra="ignore")

    identity_field: ClassVar[str] = "the instruction"

    instruction: str = Field(min_length=1)
    outputs: list[str] = Field(default_factory=list)

    @property
    def identity_text(self) -> str:
        """Where the customer's identity must be stated: anywhere in the instruction."""
        return self.instruction


class ScenarioInstructions(BaseModel):
    """Stage 3 on τ³: the user scenario's structured instructions (upstream's
    `user_scenario.instructions`) and what the agent must tell the user."""

    model_config = ConfigDict(extra="ignore")
    identity_field: ClassVar[str] = "known_info"

    reason_for_call: str = Field(min_length=1)
    known_info: str = Field(min_length=1)
    unknown_info: str | None = None
    task_instructions: str = Field(min_length=1)
    outputs: list[str] = Field(
        default_factory=list, validation_alias=AliasChoices("outputs", "communicate_info")
    )

    @property
    def instruction(self) -> str:
        """All the text the user simulator reads, for the checks that apply to all of it."""
        parts = (self.known_info, self.reason_for_call, self.unknown_info, self.task_instructions)
        return " ".join(p.strip() for p in parts if p and p.strip())

    @property
    def identity_text(self) -> str:
        """Where the customer's identity must be stated: what they know."""
        return self.known_info


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """The JSON object in `text` (bare, fenced, or between the first `{` and last `}`)."""
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    first_error: json.JSONDecodeError | None = None
    for candidate in candidates:
        if not candidate:
            continue
        try:
            return json.loads(candidate)
        except json.JSONDecodeError as exc:
            first_error = first_error or exc
    if first_error is None:
        raise ValueError("the answer is empty")
    raise ValueError(f"not valid JSON ({first_error.msg} at line {first_error.lineno})")
