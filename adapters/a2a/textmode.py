"""The text-only tool convention of τ²-bench's A2A experiment (`agentify_tau_bench`).

For agents that only exchange text: the first message carries the policy, the tool
schemas as JSON and how to answer; every agent reply holds one JSON action wrapped in
`<json>...</json>`: `{"name": <tool>, "arguments": {...}}` for a tool call, or
`{"name": "respond", "arguments": {"content": <text for the user>}}` to talk to the user.
Later messages are plain text: the user's words or a tool's output. The wording here is
ours; the convention (tags, keys, `respond`, the JSON-quoted user message at the end of
the first message) is the experiment's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tau_adapters import jsonsafe

RESPOND = "respond"
USER_MESSAGE_LABEL = "User message: "
OPEN, CLOSE = "<json>", "</json>"


class TextActionError(ValueError):
    """A <json> block that is not a valid action."""


def first_message(policy: str, tools: list[dict[str, Any]], user_text: str) -> str:
    """Policy, tools and answer format, then the user's first words (JSON-quoted)."""
    example_call = {"name": "<tool name>", "arguments": {"<parameter>": "<value>"}}
    example_reply = {"name": RESPOND, "arguments": {"content": "<your message to the user>"}}
    parts = [
        policy.strip(),
        "",
        "Tools you may call (OpenAI function schemas), one per reply:",
        json.dumps(tools, indent=2),
        "",
        "Answer every message with exactly one JSON object inside <json>...</json> tags.",
        f"To call a tool: <json>{json.dumps(example_call)}</json>",
        f"To talk to the user: <json>{json.dumps(example_reply)}</json>",
        "Do not call a tool and talk to the user in the same reply. After a tool call the "
        "next message is the tool's output; otherwise it is what the user said.",
        "",
        USER_MESSAGE_LABEL + json.dumps(user_text),
    ]
    return "\n".join(p for p in parts if p is not None).lstrip()


def user_text_of_first_message(text: str) -> str | None:
    """The user's words at the end of a first message (for agents that play this side)."""
    index = text.rfind(USER_MESSAGE_LABEL)
    if index < 0:
        return None
    try:
        value = jsonsafe.loads(text[index + len(USER_MESSAGE_LABEL) :].strip())
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def action_block(name: str, arguments: dict[str, Any]) -> str:
    return f"<json>{json.dumps({'name': name, 'arguments': arguments})}</json>"


@dataclass
class TextActions:
    """What one text reply asked for, in order."""

    messages: list[str] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def json_blocks(text: str) -> list[str]:
    """The contents of the `<json>...</json>` blocks of `text`, in order: each from an
    opening tag to the first closing tag after it (what `re.findall(r"<json>(.*?)</json>",
    text, re.DOTALL)` finds), in one linear pass, however the tags are mixed up."""
    blocks: list[str] = []
    position = 0
    while True:
        start = text.find(OPEN, position)
        if start < 0:
            return blocks
        end = text.find(CLOSE, start + len(OPEN))
        if end < 0:
            return blocks  # no closing tag after this one: none after any later one either
        blocks.append(text[start + len(OPEN) : end])
        position = end + len(CLOSE)


def parse_reply(text: str) -> TextActions:
    """Actions of a reply; text without any <json> block is a message to the user."""
    blocks = json_blocks(text)
    actions = TextActions()
    if not blocks:
        if text.strip():
            actions.messages.append(text.strip())
        return actions
    for block in blocks:
        try:
            action = jsonsafe.loads(block)
        except jsonsafe.JSONDepthError as exc:
            raise TextActionError(f"<json> block: {exc}") from None
        except ValueError:
            raise TextActionError(f"<json> block is not JSON: {block.strip()[:120]!r}") from None
        if not isinstance(action, dict) or not isinstance(action.get("name"), str):
            raise TextActionError(f"<json> action without a name: {block.strip()[:120]!r}")
        arguments = action.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise TextActionError(f"arguments of {action['name']!r} must be an object")
        if action["name"] == RESPOND:
            content = arguments.get("content")
            if not isinstance(content, str):
                raise TextActionError("respond action without a string content")
            actions.messages.append(content)
        else:
            actions.calls.append((action["name"], arguments))
    return actions


def observation_text(results: list[tuple[str, str]]) -> str:
    """Tool outputs as the next message: the output itself for one call, labelled for several."""
    if len(results) == 1:
        return results[0][1]
    return "\n\n".join(f"Output of {name}:\n{content}" for name, content in results)


def split_observations(text: str, names: list[str]) -> list[str]:
    """Undo `observation_text` for calls `names` (for agents that play the other side)."""
    if len(names) <= 1:
        return [text]
    outputs: list[str] = []
    rest = text
    for index, name in enumerate(names):
        label = f"Output of {name}:\n"
        start = rest.find(label)
        if start < 0:
            return [text] + [""] * (len(names) - 1)
        rest = rest[start + len(label) :]
        if index + 1 < len(names):
            nxt = rest.find(f"\n\nOutput of {names[index + 1]}:\n")
            outputs.append(rest if nxt < 0 else rest[:nxt])
            rest = "" if nxt < 0 else rest[nxt + 2 :]
        else:
            outputs.append(rest)
    return outputs
