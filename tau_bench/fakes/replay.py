"""A reply function that replays recorded τ-bench trajectories (historical runs).

Why: comparing two model-call paths (litellm and direct) needs the same conversations
through both; replaying the agent's and the user's recorded messages from a historical
run (`historical_trajectories/gpt-4o-airline.json`) gives realistic episodes - long
policies, tool schemas, tool calls - without a model.

The agent's requests (they carry `tools`) are matched to their episode by the first user
message, the user simulator's by the task instruction (its first sentence aside, which
later data revisions reworded) in its system prompt; each gets
the recorded message at its position (the n-th assistant or user message). Past the end
of the recording the user stops (`###STOP###`) and the agent says goodbye. Token counts
are left to the server (computed from the request body), so two paths that send
different bodies would show different tokens and costs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tau_bench.fakes.openai_server import ChatReply, ChatRequest


def _text(message: dict[str, Any]) -> str:
    return str(message.get("content") or "")


class Replay:
    """The recorded trial-`trial` episodes of a historical results file, as a responder."""

    def __init__(self, entries: Iterable[dict[str, Any]], trial: int = 0) -> None:
        self.by_first_message: dict[str, list[dict[str, Any]]] = {}
        self.by_instruction: dict[str, list[dict[str, Any]]] = {}
        seen: dict[str, int] = {}
        entries = entries_of(entries, trial)
        for entry in entries:
            traj = entry["traj"]
            users = [m for m in traj if m.get("role") == "user"]
            agent = [m for m in traj if m.get("role") == "assistant"]
            if not users:
                continue
            first = _text(users[0])
            seen[first] = seen.get(first, 0) + 1
            self.by_first_message[first] = agent
            self.by_instruction[_tail(entry["info"]["task"]["instruction"])] = users
        # An ambiguous opening cannot name its episode: those episodes are not replayable.
        for first, count in seen.items():
            if count > 1:
                self.by_first_message.pop(first, None)
        self.task_ids = sorted(
            int(e["task_id"]) for e in entries if _first_user(e) in self.by_first_message
        )

    @classmethod
    def from_file(cls, path: str | Path, trial: int = 0) -> Replay:
        return cls(json.loads(Path(path).read_text()), trial)

    def __call__(self, request: ChatRequest) -> ChatReply:
        messages = request.messages
        position = sum(1 for m in messages if m.get("role") == "assistant")
        if request.tools:
            first = next((_text(m) for m in messages if m.get("role") == "user"), "")
            recorded = self.by_first_message.get(first, [])
            if position >= len(recorded):
                return ChatReply(text="Thank you for contacting us. Goodbye!")
            message = recorded[position]
            calls = [
                (c["function"]["name"], c["function"].get("arguments") or "{}")
                for c in message.get("tool_calls") or []
            ]
            return ChatReply(text=message.get("content"), tool_calls=calls)
        system = next((_text(m) for m in messages if m.get("role") == "system"), "")
        users = next((u for text, u in self.by_instruction.items() if text in system), [])
        if position >= len(users):
            return ChatReply(text="###STOP###")
        return ChatReply(text=_text(users[position]))


def _tail(instruction: str) -> str:
    """The instruction without its first sentence (the data's later revisions reworded
    "You are <user>" as "Your user id is <user>"), as matched in the user's prompt."""
    return instruction.split(". ", 1)[-1].strip()


def entries_of(entries: Iterable[dict[str, Any]], trial: int) -> list[dict[str, Any]]:
    return [e for e in entries if e.get("trial", 0) == trial]


def _first_user(entry: dict[str, Any]) -> str:
    return next((_text(m) for m in entry["traj"] if m.get("role") == "user"), "")
