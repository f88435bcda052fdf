"""A tool call named `respond` is not a message to the user: the user never sees a tool
call, so it must not count for the outputs check. It was logged as a `respond` action, so
an agent (a hosted bot's client-side call, a model's hallucinated tool) that did the right
actions and put the required outputs in such a call scored 1.0 without telling the user."""

from __future__ import annotations

from typing import Any

from tau_adapters.conversation import Conversation
from tau_adapters.protocol import ToolCall
from tau_bench.env import RESPOND_IS_NO_TOOL, Env
from tau_bench.tasks import RESPOND_ACTION


def _outputs_task(retail: Any) -> tuple[Any, Any]:
    task = retail.tasks("test")[2]
    assert task.outputs == ["10"]
    return task, Env(retail, task)


def test_a_respond_tool_call_is_refused_and_not_logged(retail: Any) -> None:
    _, env = _outputs_task(retail)
    output = env.execute(RESPOND_ACTION, {"content": "The answer is 10."})
    assert output.is_error and output.content == RESPOND_IS_NO_TOOL
    assert env.actions == []


def test_outputs_in_a_respond_tool_call_do_not_score(retail: Any) -> None:
    task, env = _outputs_task(retail)
    conversation = Conversation(env)
    calls = [ToolCall(f"c{i}", a.name, dict(a.kwargs)) for i, a in enumerate(task.actions)]
    conversation.agent_tool_calls(calls)
    results = conversation.agent_tool_calls([ToolCall("r", RESPOND_ACTION, {"content": "10"})])
    assert results[0].is_error
    assert env.reward().reward == 0.0  # the right DB, but the user was never told "10"
    conversation.agent_message("You have 10 of them.")
    assert env.reward().reward == 1.0  # told: the outputs check finds it
