"""The prompts of the pipeline. Machine-readable parts sit between tags
(`<user_context>`, `<request>`, `<actions>`) as JSON, so a model - or the offline fake
model - can find them. Prompts take a suite domain or a `Target`: the benchmark's name,
the tools and the instruction format (v1's text, τ³'s structured fields) are the target's."""

from __future__ import annotations

import random
from typing import Any

from tau_bench.sdg.context import UserContext
from tau_bench.sdg.difficulty import Difficulty
from tau_bench.sdg.sandbox import Validation
from tau_bench.sdg.structured import dumps
from tau_bench.sdg.targets import Target, as_target
from tau_bench.sdg.targets.tau3_format import INSTRUCTION_RULES as TAU3_INSTRUCTION_RULES

PROMPT_OBSERVATION_CHARS = 800
EXAMPLES = 3

SCENARIO_SYSTEM = """You design realistic test scenarios for a customer-service agent benchmark \
({benchmark}, {domain} domain). A scenario is one customer's request and the exact sequence of tool \
calls a careful agent following the policy below makes to serve it (the ground truth).

# Agent policy
{policy}"""

SCENARIO_RULES = """Rules:
- Use only the tools listed in <tools>, with exactly their parameters and types.
- Use only ids that appear in <user_context> (user, orders, items, reservations, payment \
methods, flights); never invent one. New items must be available variants listed for the \
same product; new flights must be listed as bookable on that date with enough seats.
- Order the calls as the agent would make them, lookups included. Every call counts: \
the sequence must have between {low} and {high} calls in total.
- At least one call must change the database ({writes}), and every change must be allowed \
by the policy. Amounts must add up exactly.
- Do not use respond, think or transfer_to_human_agents.
Answer with only a JSON object: {{"summary": "<one sentence: who wants what>", \
"actions": [{{"name": "<tool>", "kwargs": {{...}}}}]}}"""

INSTRUCTION_SYSTEM = """You write the instruction a simulated customer follows in a \
customer-service benchmark ({benchmark}, {domain} domain). The instruction is written to the \
customer in the second person. It says who they are, what they know, what they want (in \
order, with their preferences and fallbacks), and their personality. It must let an agent \
that follows the policy reach exactly the given outcome, and must not contain anything the \
agent should look up."""

INSTRUCTION_RULES = """Rules:
- {identity}
- Say what the customer knows (order or reservation ids they have, item names and options, \
payment methods as the customer knows them, e.g. "your Visa ending in 7447" or "your gift \
card") and what they want; add one personality trait.
- Never write internal ids the customer would not know: item ids, product ids, payment \
method ids.
- "outputs": short strings the agent must tell the customer, only when the customer asks for \
information (e.g. a total refund); each must appear literally in one of the observations. \
Otherwise an empty list.
Answer with only a JSON object: {{"instruction": "...", "outputs": []}}"""

IDENTITY = {
    "airline": 'Start with "Your user id is {user_id}."',
    "retail": "Start with the customer's name and zip code (e.g. \"You are {first} {last} in "
    '{zip}.") or their email: the agent must authenticate them that way.',
}


def _tools(target: Target) -> list[dict[str, Any]]:
    out = []
    for schema in target.tool_schemas:
        function = schema.get("function", schema)
        out.append(
            {
                "name": function["name"],
                "description": function.get("description", ""),
                "parameters": function.get("parameters", {}),
            }
        )
    return out


def scenario_messages(
    domain: Any, context: UserContext, difficulty: Difficulty, hint: str | None
) -> list[dict[str, Any]]:
    target = as_target(domain)
    low, high = difficulty.bounds
    writes = ", ".join(sorted(target.writes & target.tool_names))
    request = {
        "stage": "scenario",
        "env": target.env,
        "difficulty": difficulty.value,
        "min_actions": low,
        "max_actions": high,
        "focus": context.focus,
        "hint": hint or "",
    }
    user = (
        f"<tools>\n{dumps(_tools(target))}\n</tools>\n\n"
        f"<user_context>\n{dumps(context.view)}\n</user_context>\n\n"
        f"<request>\n{dumps(request)}\n</request>\n\n"
        "Suggested focus (optional): "
        + ("; ".join(context.focus) or "anything realistic")
        + "\n"
        + (f"What our real traffic looks like: {hint}\n" if hint else "")
        + "\n"
        + SCENARIO_RULES.format(low=low, high=high, writes=writes)
    )
    return [
        {
            "role": "system",
            "content": SCENARIO_SYSTEM.format(
                benchmark=target.benchmark, domain=target.family, policy=target.policy
            ),
        },
        {"role": "user", "content": user},
    ]


def repair_message(validation: Validation, difficulty: Difficulty) -> dict[str, Any]:
    low, high = difficulty.bounds
    problems = "\n".join(f"- {p.describe()}" for p in validation.problems)
    ran = "\n".join(
        f"- {a.name}: {a.observation[:PROMPT_OBSERVATION_CHARS]}" for a in validation.executed
    )
    request = {"stage": "repair", "min_actions": low, "max_actions": high}
    return {
        "role": "user",
        "content": (
            f"Validation rejected this sequence:\n{problems}\n\n"
            + (
                f"Calls that ran before the failure, with what they returned:\n{ran}\n\n"
                if ran
                else ""
            )
            + f"<request>\n{dumps(request)}\n</request>\n"
            f"Propose a corrected sequence for the same customer ({low} to {high} calls), "
            "in the same JSON format."
        ),
    }


def instruction_messages(
    domain: Any,
    context: UserContext,
    summary: str,
    validation: Validation,
    rng: random.Random,
) -> list[dict[str, Any]]:
    target = as_target(domain)
    name = context.view.get("name", {})
    zip_code = context.view.get("address", {}).get("zip", "")
    identity = IDENTITY[target.family].format(
        user_id=context.user_id,
        first=name.get("first_name", ""),
        last=name.get("last_name", ""),
        zip=zip_code,
    )
    shipped = target.style_examples()
    examples = "\n".join(f"- {e}" for e in rng.sample(shipped, min(EXAMPLES, len(shipped))))
    actions = [
        {
            "name": a.name,
            "kwargs": a.kwargs,
            "observation": a.observation[:PROMPT_OBSERVATION_CHARS],
        }
        for a in validation.executed
    ]
    request = {"stage": "instruction", "env": target.env, "user_id": context.user_id}
    rules = TAU3_INSTRUCTION_RULES if target.instruction_format == "tau3" else INSTRUCTION_RULES
    user = (
        f"<user_context>\n{dumps(context.view)}\n</user_context>\n\n"
        f"<scenario>{summary}</scenario>\n\n"
        f"<actions>\n{dumps(actions)}\n</actions>\n\n"
        f"<request>\n{dumps(request)}\n</request>\n\n"
        f"Instructions of the benchmark, for the style:\n{examples}\n\n"
        + rules.format(identity=identity)
    )
    system = INSTRUCTION_SYSTEM.format(benchmark=target.benchmark, domain=target.family)
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": user},
    ]
