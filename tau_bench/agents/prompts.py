"""Prompt text of the local agent strategies (act, react, few-shot), in one place.

The text agents (act, react) have no native function calling: the tools are listed in
the system prompt and the model answers with one `Action: {json}`; talking to the user
is the pseudo-tool `respond`. The wording is ours; the format follows τ-bench's.
"""

from __future__ import annotations

import json
from typing import Any

RESPOND = "respond"

RESPOND_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": RESPOND,
        "description": "Send a message to the user. Use it to ask for information, "
        "confirm an action or give an answer.",
        "parameters": {
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": "The message to the user."}
            },
            "required": ["content"],
        },
    },
}

_ACTION_EXAMPLE = '{"name": "<tool name>", "arguments": {<arguments as a JSON object>}}'

_ACT = """# How to answer
You act by calling exactly one tool per reply; the tools are listed below. Every reply \
must have exactly this form, with nothing before or after it:

Action:
{example}

To talk to the user, call `{respond}`, e.g. \
Action:
{{"name": "{respond}", "arguments": {{"content": "Could you give me your user id?"}}}}

After a tool call you receive its result in a message starting with "Observation:". \
Call one tool at a time and wait for its result before the next one.

# Tools
{tools}"""

_REACT = """# How to answer
Before each action, think about the situation, then act by calling exactly one tool; \
the tools are listed below. Every reply must have exactly this form:

Thought:
<your reasoning: what you know, what the policy requires, what to do next>
Action:
{example}

To talk to the user, call `{respond}`, e.g. \
Action:
{{"name": "{respond}", "arguments": {{"content": "Could you give me your user id?"}}}}

After a tool call you receive its result in a message starting with "Observation:". \
Call one tool at a time and wait for its result before the next one. The user never \
sees your thoughts.

# Tools
{tools}"""

OBSERVATION_PREFIX = "Observation: "


def _tool_list(tools: list[dict[str, Any]]) -> str:
    listed = [t.get("function", t) for t in tools] + [RESPOND_TOOL["function"]]
    return json.dumps(listed, indent=1)


def act_system_prompt(policy: str, tools: list[dict[str, Any]]) -> str:
    return (
        policy
        + "\n\n"
        + _ACT.format(example=_ACTION_EXAMPLE, respond=RESPOND, tools=_tool_list(tools))
    )


def react_system_prompt(policy: str, tools: list[dict[str, Any]]) -> str:
    return (
        policy
        + "\n\n"
        + _REACT.format(example=_ACTION_EXAMPLE, respond=RESPOND, tools=_tool_list(tools))
    )


_FEW_SHOT_HEADER = """# Example conversations
Below are example conversations between users and an agent that follows this policy \
("assistant: None" marks a turn in which the agent called a tool; the next "tool:" line \
is that tool's result). Learn from how the agent gathers information and acts; the \
details belong to other users and must not be reused."""


def few_shot_system_prompt(policy: str, displays: list[str]) -> str:
    """The policy followed by the chosen example conversations."""
    if not displays:
        return policy
    examples = "\n\n".join(
        f"## Example {i}\n{display.strip()}" for i, display in enumerate(displays, 1)
    )
    return f"{policy}\n\n{_FEW_SHOT_HEADER}\n\n{examples}"
