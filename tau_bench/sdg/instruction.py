"""Stage 3 checks: is the model's instruction usable as a τ-bench task instruction?

It must address the customer in the second person, identify them the way the agent's
policy authenticates (airline: user id; retail: email, or name and zip - a user id alone
would not let a policy-following agent authenticate), leak no internal id the customer
would not know (item, product or payment method ids), and every required output must be
grounded: it appears in some observation of the validated actions, so it is a fact the
agent can state, not something the model made up. Outputs lose their commas because the
benchmark's outputs check removes commas from the agent's messages only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from tau_bench.sdg.context import UserContext
from tau_bench.sdg.sandbox import Validation

MAX_OUTPUTS = 5
MAX_OUTPUT_CHARS = 80
MIN_CHARS = 40
MAX_CHARS = 2500
_SECOND_PERSON = re.compile(r"\byou(r|rs|'re|rself)?\b", re.IGNORECASE)
_ID_KEYS = ("item_id", "product_id", "payment_method_id", "payment_id")
_ID_LIST_KEYS = ("item_ids", "new_item_ids")


class Draft(Protocol):
    """An instruction answer of either format (`answers.InstructionDraft` for v1,
    `answers.ScenarioInstructions` for τ³): all its text, where the identity goes, outputs."""

    @property
    def instruction(self) -> str: ...

    @property
    def identity_text(self) -> str: ...

    @property
    def identity_field(self) -> str:
        """How the message names where the identity goes."""
        ...

    @property
    def outputs(self) -> list[str]: ...


def clean_output(text: str) -> str:
    return " ".join(str(text).replace(",", "").split())


def _internal_ids(context: UserContext, validation: Validation) -> set[str]:
    ids: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in _ID_KEYS and isinstance(item, str):
                    ids.add(item)
                elif key in _ID_LIST_KEYS and isinstance(item, list):
                    ids.update(str(i) for i in item)
                elif key == "payment_methods" and isinstance(item, list | dict):
                    methods = item.values() if isinstance(item, dict) else item
                    ids.update(
                        str(m.get("id")) for m in methods if isinstance(m, dict) and m.get("id")
                    )
                    walk(item)
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(context.view)
    for action in validation.executed:
        walk(action.kwargs)
    ids.update(context.view.get("alternatives", {}).keys())
    return {i for i in ids if len(i) >= 6}


def _identifies(context: UserContext, text: str) -> bool:
    lowered = text.lower()
    if context.domain == "airline":
        return context.user_id in text
    view = context.view
    email = str(view.get("email", "")).lower()
    name = view.get("name", {})
    first, last = str(name.get("first_name", "")).lower(), str(name.get("last_name", "")).lower()
    zip_code = str(view.get("address", {}).get("zip", ""))
    return bool(email and email in lowered) or (
        bool(first and last and zip_code)
        and first in lowered
        and last in lowered
        and zip_code in text
    )


def grounded(output: str, observations: Iterable[str]) -> bool:
    needle = output.lower()
    return any(needle in obs.lower().replace(",", "") for obs in observations)


def instruction_check(context: UserContext, validation: Validation) -> Callable[[Any], list[str]]:
    """A check for `ask_json`: the problems of a draft (empty: usable)."""
    internal = _internal_ids(context, validation)
    observations = [a.observation for a in validation.executed]

    def check(draft: Draft) -> list[str]:
        text = draft.instruction.strip()
        problems = []
        if not MIN_CHARS <= len(text) <= MAX_CHARS:
            problems.append(f"the instruction must have {MIN_CHARS} to {MAX_CHARS} characters")
        if not _SECOND_PERSON.search(text):
            problems.append('write to the customer in the second person ("You ...")')
        if not _identifies(context, draft.identity_text):
            how = (
                f"their user id {context.user_id}"
                if context.domain == "airline"
                else "their email, or their full name and zip code"
            )
            problems.append(f"{draft.identity_field} must tell the customer {how}")
        leaked = sorted(i for i in internal if i in text)
        if leaked:
            problems.append(f"internal ids the customer would not know: {', '.join(leaked)}")
        if len(draft.outputs) > MAX_OUTPUTS:
            problems.append(f"at most {MAX_OUTPUTS} outputs")
        for output in draft.outputs:
            cleaned = clean_output(output)
            if not cleaned or len(cleaned) > MAX_OUTPUT_CHARS:
                problems.append(f"output {output!r} must be a short non-empty string")
            elif not grounded(cleaned, observations):
                problems.append(
                    f"output {output!r} appears in no observation: outputs must be facts the "
                    "tools returned (e.g. a total from calculate)"
                )
        return problems

    return check


def final_outputs(draft: Draft) -> list[str]:
    out: list[str] = []
    for output in draft.outputs:
        cleaned = clean_output(output)
        if cleaned and cleaned not in out:
            out.append(cleaned)
    return out
