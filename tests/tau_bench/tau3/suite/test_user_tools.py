"""The τ³ LLM user with tools of its own (telecom): its model calls the phone's tools
through real litellm tool calling, the observations come back to it alone, and the agent
only ever hears what it then says. The fake user model is a real OpenAI-compatible server
on 127.0.0.1 (so either model-call path, litellm or direct, reaches it over a socket); it
decides from the request it gets.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tau_adapters.protocol import AgentInput, AgentTurn, SessionContext, ToolResults, UserTurn
from tau_bench.agents.oracle import OracleAgent
from tau_bench.episode import run_task
from tau_bench.fakes.openai_server import OpenAIServer
from tau_bench.suites import load_domain
from tau_bench.users import build_user
from tests.tau_bench.agents.fake_llm import FakeLLM, Reply, Request
from tests.tau_bench.tau3.tau3_runs import ENV, TAU

COMPLAINT = "My mobile data does not work."
DONE = "Done, I did all of that on my phone."
ASKED = re.compile(r"^- (\w+)\(", re.MULTILINE)


def phone_user(request: Request) -> Reply:
    """A user model that does on its phone exactly what the agent's last message asked.

    It checks what the original sends a user with tools: the user tools only, offered
    with `tool_choice: auto`, and the tools guidelines in the system prompt."""
    assert request.body.get("tool_choice") == "auto"
    assert "toggle_airplane_mode" in request.tools and "get_customer_by_phone" not in request.tools
    last_agent = max(i for i, m in enumerate(request.messages) if m["role"] == "user")
    asked = ASKED.findall(request.messages[last_agent]["content"])
    if not asked:
        return Reply(text=COMPLAINT)
    done = [
        c["name"]
        for m in request.messages[last_agent + 1 :]
        for c in m.get("tool_calls") or []
        if m["role"] == "assistant"
    ]
    answered = [m for m in request.messages[last_agent + 1 :] if m["role"] == "tool"]
    assert len(answered) == len(done)  # every call of its own came back to it
    if len(done) < len(asked):
        return Reply(tool_calls=[(asked[len(done)], {})])
    return Reply(text=DONE)


@pytest.fixture
def fake_user_model(llm_env: None) -> Iterator[tuple[FakeLLM, str]]:
    """The fake model (its brain set by the test) behind a loopback server: (fake, base URL)."""
    fake = FakeLLM()
    with OpenAIServer(fake.respond) as server:
        yield fake, server.base_url
    assert not fake.failures, f"the fake model's brain failed: {fake.failures}"


def tau3_user(root: Path, api_base: str) -> Any:
    return build_user("tau3", model="openai/gpt-4.1", api_base=api_base, data_dir=str(root))


class Recording(OracleAgent):
    """The oracle, keeping everything the loop sends it."""

    def __init__(self) -> None:
        super().__init__()
        self.inputs: list[AgentInput] = []

    async def start(self, session: SessionContext) -> None:
        self.session = session
        await super().start(session)

    async def send(self, turn: AgentInput) -> AgentTurn:
        self.inputs.append(turn)
        return await super().send(turn)


async def test_llm_user_toggles_its_phone_and_the_agent_hears_only_words(
    fake_user_model: tuple[FakeLLM, str], prompt_root: Path
) -> None:
    fake_llm, api_base = fake_user_model
    fake_llm.brain = phone_user
    domain: Any = load_domain("tau3/telecom", prompt_root)
    task = domain.tasks()[0]
    assert [a.name for a in task.user_actions] == ["toggle_airplane_mode", "toggle_roaming"]
    agent = Recording()
    user = tau3_user(prompt_root, api_base)
    episode = await run_task(domain, task, 0, agent, user)

    assert episode.result.error is None, episode.result.error
    assert episode.reward is not None and episode.reward.reward == 1.0
    # The user's model got the original's prompt for a user with tools.
    guidelines = (
        prompt_root / "data/tau2/user_simulator/simulation_guidelines_tools.md"
    ).read_text()
    first = fake_llm.requests[0]
    assert first.system.startswith(guidelines.replace("<PERSONA_GUIDELINES>", ""))
    assert first.messages == [{"role": "user", "content": "Hi! How can I help you today?"}]
    assert set(first.tools) == {t["function"]["name"] for t in domain.user_tool_schemas}
    # Its calls' observations came back to it as tool messages with the calls' ids.
    last = fake_llm.requests[-1].messages
    calls = [c for m in last for c in m.get("tool_calls") or []]
    results = [m for m in last if m["role"] == "tool"]
    assert [c["name"] for c in calls] == ["toggle_airplane_mode", "toggle_roaming"]
    assert [m["tool_call_id"] for m in results] == [c["id"] for c in calls]
    assert all(m["content"] for m in results)
    # The agent only heard words: the complaint, then "done", never a tool message.
    heard = [t.text for t in agent.inputs if isinstance(t, UserTurn)]
    assert heard == [COMPLAINT, DONE]
    assert not any(isinstance(t, ToolResults) for t in agent.inputs)  # the oracle asks only
    assert all(t["function"]["name"] != "toggle_airplane_mode" for t in agent.session.tools)
    # The record shows both sides' calls, labelled.
    requestors = [
        (m["role"], c["function"]["name"], c.get("requestor"))
        for m in episode.result.messages
        for c in m.get("tool_calls") or []
    ]
    assert ("user", "toggle_airplane_mode", "user") in requestors
    assert ("user", "toggle_roaming", "user") in requestors
    tool_messages = [m for m in episode.result.messages if m["role"] == "tool"]
    assert {m["requestor"] for m in tool_messages} == {"user"}
    assert episode.result.user_usage.calls == 4  # greeting, two calls, then words


async def test_llm_user_without_tools_keeps_the_plain_guidelines(
    fake_user_model: tuple[FakeLLM, str], prompt_root: Path
) -> None:
    """Retail gives the user no tools: no tools offered, the plain guidelines."""
    fake_llm, api_base = fake_user_model
    fake_llm.brain = lambda request: Reply(text="Bye ###STOP###")
    domain: Any = load_domain("tau3/retail", prompt_root)
    user = tau3_user(prompt_root, api_base)
    episode = await run_task(domain, domain.tasks()[0], 0, OracleAgent(), user)
    assert episode.result.stop_reason == "user_stop"
    (request,) = fake_llm.requests
    assert request.tools == [] and "tool_choice" not in request.body
    plain = (prompt_root / "data/tau2/user_simulator/simulation_guidelines.md").read_text()
    assert request.system.startswith(plain.replace("<PERSONA_GUIDELINES>", ""))


def test_tau_run_telecom_with_the_llm_user_records_both_sides(
    tmp_path: Path, prompt_root: Path
) -> None:
    """`tau run --user-strategy tau3` against a real OpenAI-compatible server on loopback."""
    fake = FakeLLM(brain=phone_user)
    with OpenAIServer(fake.respond) as server:
        env = {**ENV, "TAU3_BENCH_DATA": str(prompt_root), "OPENAI_API_KEY": "sk-test"}
        command = [
            str(TAU), "run", "--env", "tau3/telecom", "--agent-strategy", "oracle",
            "--user-strategy", "tau3", "--user-model", "openai/fake-user",
            "--user-api-base", server.base_url, "--task-ids", "0-1",
            "--log-dir", str(tmp_path), "--quiet",
        ]  # fmt: skip
        proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert not fake.failures, fake.failures
    (log,) = tmp_path.glob("*.jsonl")
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    episodes = [r for r in rows if r.get("type") == "episode"]
    assert [r["reward"] for r in episodes] == [1.0, 1.0]
    for r in episodes:
        sides = {
            (m["role"], c.get("requestor"))
            for m in r["messages"]
            for c in m.get("tool_calls") or []
        }
        assert ("user", "user") in sides
        assert all(m.get("requestor") for m in r["messages"] if m["role"] == "tool")


@pytest.mark.parametrize(
    "arguments",
    ['{"x": ', '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}"],
    ids=["truncated", "nested_beyond_the_recursion_limit"],
)
async def test_a_user_call_with_undecodable_arguments_gets_an_error_and_is_scored(
    fake_user_model: tuple[FakeLLM, str], prompt_root: Path, arguments: str
) -> None:
    """Undecodable arguments (bad syntax, or nesting that makes `json.loads` raise
    RecursionError, not a ValueError) reach the phone as text: the call is answered with
    an error without running, the user goes on, and the episode is scored. The call is
    in the record but not in the τ³ trajectory, whose calls the evaluator replays."""
    fake_llm, api_base = fake_user_model

    def brain(request: Request) -> Reply:
        """`phone_user`, but its first call goes out with `arguments` and is then retried."""
        last_agent = max(i for i, m in enumerate(request.messages) if m["role"] == "user")
        asked = ASKED.findall(request.messages[last_agent]["content"])
        if not asked:
            return Reply(text=COMPLAINT)
        plan = [(asked[0], arguments), *((name, {}) for name in asked)]
        done = sum(
            len(m.get("tool_calls") or [])
            for m in request.messages[last_agent + 1 :]
            if m["role"] == "assistant"
        )
        return Reply(tool_calls=[plan[done]]) if done < len(plan) else Reply(text=DONE)

    fake_llm.brain = brain
    domain: Any = load_domain("tau3/telecom", prompt_root)
    user = tau3_user(prompt_root, api_base)
    episode = await run_task(domain, domain.tasks()[0], 0, Recording(), user)

    assert episode.result.error is None, str(episode.result.error)[:300]
    tool_messages = [m for m in episode.result.messages if m["role"] == "tool"]
    assert tool_messages[0]["content"].startswith("Error: tool arguments must be a JSON object")
    assert len(tool_messages) == 3  # the refused call, then the two the task needs
    assert episode.reward is not None and episode.reward.reward == 1.0
