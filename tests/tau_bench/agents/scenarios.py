"""Scripted model behaviour for airline task 13, decided from what each request contains.

Task 13: customer james_lee_6136 wants to change reservation XEWRD9; the ground truth is
a single transfer_to_human_agents call. The fake customer answers from the instruction
it finds in its system prompt; the fake agent asks for the user id, looks the user up
with the id the customer gave, and transfers with a summary built from the lookup's
observation. Nothing the scenario says is canned: ids and names travel through the
real user simulator, agent, loop and Env.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.tau_bench.agents.fake_llm import Reply, Request

USER_MARK = "You are playing a customer"
TEXT_AGENT_MARK = "# How to answer"
OBSERVATION = "Observation: "
TASK_ID = 13
USER_ID = "james_lee_6136"
RESERVATION = "XEWRD9"


def instruction_of(system: str) -> str:
    match = re.search(r"Instruction:\n(.*?)\n\nRules:", system, re.DOTALL)
    assert match, "the user simulator's system prompt must embed the instruction"
    return match.group(1)


def customer_reply(request: Request) -> str:
    """What the customer of task 13 says next, from its instruction and the agent's words."""
    instruction = instruction_of(request.system)
    user_id = re.search(r"user id is (\w+)", instruction)
    reservation = re.search(r"reservation (\w{6})", instruction)
    assert user_id and reservation
    said = request.last_text.lower()
    if "how can i help" in said:
        return f"Hi, I'd like to change the flight in my reservation {reservation.group(1)}."
    if "user id" in said:
        return f"Sure, my user id is {user_id.group(1)}."
    return "###STOP###"


def _reservation(request: Request) -> str:
    for text in request.texts("user"):
        match = re.search(r"reservation (\w{6})", text)
        if match:
            return match.group(1)
    raise AssertionError("the customer never named a reservation")


def next_action(request: Request, observation: str | None, said: str) -> tuple[str, dict[str, Any]]:
    """The agent's next step: a tool call, or ("respond", {"content": ...})."""
    if observation is not None:
        user = json.loads(observation)
        reservation = _reservation(request)
        assert reservation in user["reservations"]
        name = f"{user['name']['first_name']} {user['name']['last_name']}"
        return (
            "transfer_to_human_agents",
            {"summary": f"{name} wants to change reservation {reservation}; it is partly used."},
        )
    user_id = re.search(r"user id is (\w+)", said)
    if user_id:
        return "get_user_details", {"user_id": user_id.group(1)}
    return "respond", {"content": "I can help with that. Could you tell me your user id?"}


class Task13:
    """A brain for FakeLLM serving the customer and every agent strategy of task 13."""

    def __init__(self) -> None:
        self.roles: list[str] = []

    def __call__(self, request: Request) -> Reply:
        if USER_MARK in request.system:
            self.roles.append("user")
            return Reply(text=customer_reply(request))
        if TEXT_AGENT_MARK in request.system:
            self.roles.append("text_agent")
            return self.text_agent(request)
        assert request.tools, "a tool-calling agent request must carry the tools"
        self.roles.append("agent")
        last = request.last
        observation = last["content"] if last.get("role") == "tool" else None
        name, args = next_action(request, observation, request.last_text)
        if name == "respond":
            return Reply(text=args["content"])
        return Reply(tool_calls=[(name, args)])

    def text_agent(self, request: Request) -> Reply:
        said = request.last_text
        observation = said[len(OBSERVATION) :] if said.startswith(OBSERVATION) else None
        name, args = next_action(request, observation, said)
        action = "Action:\n" + json.dumps({"name": name, "arguments": args})
        if "Thought:" in request.system:
            action = f"Thought:\nStep {len(request.messages)}: I should call {name}.\n" + action
        return Reply(text=action)
