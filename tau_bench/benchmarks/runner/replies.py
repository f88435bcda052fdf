"""The scripted model of the runner benchmark, as the fake OpenAI server's reply function.

The agent (requests that carry `tools`) calls one tool, then talks; the user greets,
thanks, then sends ###STOP###: 6 sequential model calls per episode.
"""

from __future__ import annotations

from typing import Any

from tau_bench.fakes.openai_server import ChatReply, ChatRequest

USER_LINES = ["Hi, I would like to check my profile.", "No, that is all. Thank you!"]
USAGE = (100, 10)  # tokens per call: a priced model's cost is computed as in real runs


def agent_reply(messages: list[dict[str, Any]]) -> ChatReply:
    if messages and messages[-1].get("role") == "tool":
        return ChatReply(text="I found your profile. Anything else?", usage=USAGE)
    if not any(m.get("role") == "tool" for m in messages):
        call = ("get_user_details", {"user_id": "mia_li_3668"})
        return ChatReply(tool_calls=[call], usage=USAGE)
    return ChatReply(text="You are all set. Goodbye!", usage=USAGE)


def user_reply(messages: list[dict[str, Any]]) -> ChatReply:
    said = sum(1 for m in messages if m.get("role") == "assistant")
    text = USER_LINES[said] if said < len(USER_LINES) else "###STOP###"
    return ChatReply(text=text, usage=USAGE)


def respond(request: ChatRequest) -> ChatReply:
    """The agent's turn when the request offers tools, else the user's."""
    messages = request.messages
    return agent_reply(messages) if request.tools else user_reply(messages)
