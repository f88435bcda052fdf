"""The words the simulated customers are given: one place, so strategies stay comparable.

The rules are τ-bench's (one message at a time, reveal information only when needed,
never invent facts, ###STOP### when done); the wording is ours.
"""

from __future__ import annotations

from tau_adapters.protocol import STOP_TOKEN

GREETING = "Hi! How can I help you today?"
"""The agent's opening line the simulated customer answers first, as upstream did."""

_BASE = """You are playing a customer who is talking to a customer-service agent. Who you \
are, what you want and what you know are all described in the instruction below.

Instruction:
{instruction}

Rules:
- Write one message at a time, only as the customer. Never write the agent's part.
- Do not tell the agent everything at once: give only what the current step of the \
conversation needs.
- Never invent anything the instruction does not give you (ids, numbers, names, \
addresses, preferences). If the agent asks for something you do not know, say that you \
do not have it or do not remember it.
- Do not copy the instruction word for word; say things in your own words, as a real \
customer would, and keep the personality the instruction describes.
- Stay with the instruction's goal and its conditions on what to accept or refuse.
- Once the goal is fully met, or it clearly cannot be met, reply with {stop} and nothing \
else to end the conversation."""

_REACT_FORMAT = """

Format every reply exactly like this:
Thought:
<what you know, what the agent asked, and what to say next>

User Response:
<the message the agent will see>

Only the part after "User Response:" is sent to the agent."""


def user_system_prompt(instruction: str) -> str:
    """The system prompt of the plain LLM customer (and of verify / reflection)."""
    return _BASE.format(instruction=instruction, stop=STOP_TOKEN)


def react_system_prompt(instruction: str) -> str:
    """The plain prompt plus the Thought / User Response format."""
    return user_system_prompt(instruction) + _REACT_FORMAT


VERIFY_SYSTEM = """You review messages written by a simulated customer in a customer-service \
conversation. The customer was given an instruction describing who they are and what they \
want. Judge only the customer's proposed next message."""

VERIFY_REQUEST = """Instruction given to the customer:
{instruction}

Conversation so far:
{transcript}

Proposed next customer message:
{candidate}

Is the proposed message consistent with the instruction and the conversation? It must not \
invent facts the instruction does not give, must not reveal more than the current step \
needs, must pursue the instruction's goal, and must use {stop} only when the goal is met \
or cannot be met.

Explain briefly, then end with a line that is exactly "Classification: true" (consistent) \
or "Classification: false" (not consistent)."""

REFLECT_REQUEST = """Your last proposed message was judged inconsistent with your \
instruction:
{candidate}

Think about what was wrong with it, then write a better message for the same point of \
the conversation. Reply exactly in this format:
Reflection:
<what was wrong and how to fix it>

Response:
<the corrected message the agent will see>"""


def transcript(history: list[tuple[str, str]]) -> str:
    """`(speaker, text)` pairs as one line each, for the reviewer's prompt."""
    if not history:
        return "(nothing yet)"
    return "\n".join(f"{speaker}: {text}" for speaker, text in history)
