"""Ask the model for a JSON answer, check it, and give it one chance to fix it.

Every answer is parsed into a pydantic model and then passed to an optional semantic
`check`. If either fails, the model sees its answer and the errors once more; a second
failure raises `AnswerRejected` with reason "malformed" (not usable JSON / wrong shape)
or the check's reason. Usage of every call is kept, failures included.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from tau_adapters.protocol import Usage
from tau_bench.llm import LLMConfig, complete
from tau_bench.sdg.answers import extract_json

T = TypeVar("T", bound=BaseModel)

MALFORMED = "malformed"
JSON_MODE = {"type": "json_object"}


class AnswerRejected(Exception):
    """The model's answer was unusable twice; `reason` is the rejection reason code."""

    def __init__(self, reason: str, errors: Sequence[str], usage: Usage, raw: str) -> None:
        super().__init__(f"{reason}: {'; '.join(errors)}")
        self.reason = reason
        self.errors = list(errors)
        self.usage = usage
        self.raw = raw


@dataclass
class Answer(Generic[T]):
    """A usable answer, the conversation that produced it and what it cost."""

    value: T
    raw: str
    messages: list[dict[str, Any]]
    usage: Usage
    attempts: int
    first_errors: list[str] = field(default_factory=list)


def _content(completion: Any) -> str:
    """The answer text; some providers return JSON mode answers as a tool call."""
    if completion.content.strip():
        return str(completion.content)
    for call in completion.tool_calls:
        arguments = call.get("function", {}).get("arguments")
        if isinstance(arguments, str) and arguments.strip():
            return arguments
    return ""


def _format_errors(exc: ValidationError) -> list[str]:
    out = []
    for error in exc.errors()[:8]:
        where = ".".join(str(p) for p in error["loc"]) or "(root)"
        out.append(f"{where}: {error['msg']}")
    return out


def parse_answer(
    text: str, model: type[T], check: Callable[[T], list[str]] | None
) -> tuple[T | None, str, list[str]]:
    """(value, reason, errors): value None with the reason and errors when unusable."""
    try:
        data = extract_json(text)
    except ValueError as exc:
        return None, MALFORMED, [str(exc)]
    try:
        value = model.model_validate(data)
    except ValidationError as exc:
        return None, MALFORMED, _format_errors(exc)
    if check is not None:
        problems = check(value)
        if problems:
            return None, "", problems
    return value, "", []


def feedback(errors: Sequence[str]) -> str:
    listed = "\n".join(f"- {e}" for e in errors)
    return (
        "Your answer cannot be used:\n"
        f"{listed}\n"
        "Answer again with only the corrected JSON object, in the format asked."
    )


async def ask_json(
    config: LLMConfig,
    messages: Sequence[dict[str, Any]],
    model: type[T],
    *,
    check: Callable[[T], list[str]] | None = None,
    check_reason: str = MALFORMED,
    json_mode: bool = True,
) -> Answer[T]:
    """Ask until the answer parses and passes `check`, at most twice (one retry)."""
    conversation = [dict(m) for m in messages]
    usage = Usage()
    overrides: dict[str, Any] = {"response_format": JSON_MODE} if json_mode else {}
    first_errors: list[str] = []
    raw = ""
    reason = MALFORMED
    errors: list[str] = []
    for attempt in (1, 2):
        completion = await complete(config, conversation, **overrides)
        usage.add(completion.usage)
        raw = _content(completion)
        value, reason, errors = parse_answer(raw, model, check)
        conversation.append({"role": "assistant", "content": raw})
        if value is not None:
            return Answer(value, raw, conversation, usage, attempt, first_errors)
        reason = reason or check_reason
        if attempt == 1:
            first_errors = list(errors)
            conversation.append({"role": "user", "content": feedback(errors)})
    raise AnswerRejected(reason, errors, usage, raw)


def dumps(value: Any) -> str:
    """Compact, stable JSON for prompts."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=False)
