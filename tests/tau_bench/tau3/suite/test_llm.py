"""The τ³ NL judge, LLM agent and LLM user through real litellm calls answered by respx."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tau_adapters.registry import build_provider
from tau_bench.episode import run_task
from tau_bench.suites import load_domain
from tau_bench.suites.tau3 import make_judge
from tau_bench.tau3.judge import JudgeError
from tau_bench.users import build_user
from tests.tau_bench.agents.fake_llm import FakeLLM, Reply, Request
from tests.tau_bench.tau3.suite.conftest import FIXTURE_PROMPTS

JUDGE = "openai/gpt-4.1-2025-04-14"


def _verdict(request: Request, met: bool = True) -> Reply:
    wanted = request.last_text.split("expectedOutcomes:\n", 1)[1]
    outcomes = eval(wanted)  # the original sends str(list): a Python literal
    return Reply(
        text=json.dumps(
            {
                "results": [
                    {"expectedOutcome": o, "reasoning": "seen", "metExpectation": met}
                    for o in outcomes
                ]
            }
        )
    )


async def _oracle_retail(prompt_root: Path, judge_model: str):  # type: ignore[no-untyped-def]
    domain = load_domain("tau3/retail", prompt_root)
    domain = domain.with_judge(make_judge(judge_model, {"root": prompt_root}))
    i, task = next(
        (i, t)
        for i, t in enumerate(domain.tasks())
        if "NL_ASSERTION" in t.task.reward_basis and t.task.evaluation_criteria.nl_assertions
    )
    agent = build_provider("oracle", {}).new_adapter()
    return await run_task(domain, task, i, agent, build_user("scripted"))


async def test_judge_sends_the_original_prompt_and_records_cost(
    fake_llm: FakeLLM, prompt_root: Path
) -> None:
    fake_llm.brain = _verdict
    episode = await _oracle_retail(prompt_root, JUDGE)
    assert episode.reward is not None and episode.reward.reward == 1.0
    (request,) = fake_llm.requests
    assert request.system == FIXTURE_PROMPTS["nl_judge_system_prompt"]
    assert request.last_text.startswith("conversation:\nassistant: Hi! How can I help you today?")
    assert request.body["temperature"] == 0.0
    usage = episode.reward.judge_usage
    assert usage["model"] == JUDGE and usage["calls"] == 1 and usage["cost"] > 0
    checks = episode.reward.to_dict()["reward_info"]["nl_assertions"]
    assert checks and all(c["met"] and c["justification"] == "seen" for c in checks)


async def test_unmet_assertion_scores_zero(fake_llm: FakeLLM, prompt_root: Path) -> None:
    fake_llm.brain = lambda r: _verdict(r, met=False)
    episode = await _oracle_retail(prompt_root, JUDGE)
    assert episode.reward is not None and episode.reward.reward == 0.0
    assert "NL assertion not met" in episode.reward.to_dict()["failure_report"]


@pytest.mark.parametrize("answer", ["not json", '{"results": []}', '{"results": [{"x": 1}]}'])
async def test_bad_verdict_is_a_harness_error_never_a_pass(
    fake_llm: FakeLLM, prompt_root: Path, answer: str
) -> None:
    fake_llm.brain = lambda r: Reply(text=answer)
    with pytest.raises(JudgeError) as caught:
        await _oracle_retail(prompt_root, JUDGE)
    assert getattr(caught.value, "retryable", False)
    assert len(fake_llm.requests) == 3  # asked again, then given up


async def test_tau3_agent_and_user_prompts(fake_llm: FakeLLM, prompt_root: Path) -> None:
    domain = load_domain("tau3/mock", prompt_root)
    task = domain.tasks()[0]

    def brain(request: Request) -> Reply:
        if request.system.startswith("<i>"):  # the agent
            if request.last.get("role") == "user":
                return Reply(
                    tool_calls=[
                        ("create_task", {"user_id": "user_1", "title": "Important Meeting"})
                    ]
                )
            return Reply(text="Created task_2 for you.")
        if len(request.messages) == 1:  # the user answers the greeting
            return Reply(text="Please create 'Important Meeting' for user_1.")
        return Reply(text="Thanks! ###TRANSFER###")

    fake_llm.brain = brain
    agent = build_provider(
        "tau3-llm", {"model": "openai/gpt-4.1", "data_dir": str(prompt_root)}
    ).new_adapter()
    user = build_user("tau3", model="openai/gpt-4.1", data_dir=str(prompt_root))
    episode = await run_task(domain, task, 0, agent, user)
    assert episode.result.error is None and episode.result.stop_reason == "user_stop"
    assert episode.reward is not None and episode.reward.reward == 1.0
    agent_req = next(r for r in fake_llm.requests if r.system.startswith("<i>"))
    assert agent_req.system == (f"<i>\nFIXTURE AGENT INSTRUCTION\n</i>\n<p>\n{domain.policy}\n</p>")
    assert agent_req.messages[0] == {
        "role": "assistant",
        "content": "Hi! How can I help you today?",
    }
    assert "create_task" in agent_req.tools
    user_req = next(r for r in fake_llm.requests if not r.system.startswith("<i>"))
    # Mock gives the user tools of its own: the original's guidelines for a user with tools.
    tools_md = prompt_root / "data/tau2/user_simulator/simulation_guidelines_tools.md"
    assert user_req.system.startswith(tools_md.read_text().replace("<PERSONA_GUIDELINES>", ""))
    assert "check_notifications" in user_req.tools and "create_task" not in user_req.tools
    assert "<s>\nPersona:\n\tProfessional" in user_req.system
    assert user_req.messages[0]["content"] == "Hi! How can I help you today?"


async def test_agent_call_with_undecodable_arguments_is_refused_and_the_episode_scored(
    fake_llm: FakeLLM, prompt_root: Path
) -> None:
    """The agent's model sends arguments that are not JSON, reads the error, then sends
    the call again: the refused call never ran, so the evaluator's replay of the τ³
    trajectory (which leaves it out) matches and the episode scores 1."""
    domain = load_domain("tau3/mock", prompt_root)
    good = {"user_id": "user_1", "title": "Important Meeting"}

    def brain(request: Request) -> Reply:
        if request.system.startswith("<i>"):  # the agent
            tool_replies = [m for m in request.messages if m["role"] == "tool"]
            if not tool_replies:
                return Reply(tool_calls=[("create_task", '{"user_id": "user_1", ')])
            if len(tool_replies) == 1:
                assert tool_replies[0]["content"].startswith("Error: tool arguments must be")
                return Reply(tool_calls=[("create_task", good)])
            return Reply(text="Created task_2 for you.")
        if len(request.messages) == 1:
            return Reply(text="Please create 'Important Meeting' for user_1.")
        return Reply(text="Thanks! ###TRANSFER###")

    fake_llm.brain = brain
    agent = build_provider(
        "tau3-llm", {"model": "openai/gpt-4.1", "data_dir": str(prompt_root)}
    ).new_adapter()
    user = build_user("tau3", model="openai/gpt-4.1", data_dir=str(prompt_root))
    episode = await run_task(domain, domain.tasks()[0], 0, agent, user)

    assert episode.result.error is None, str(episode.result.error)[:300]
    assert episode.reward is not None and episode.reward.reward == 1.0
    calls = [c for m in episode.result.messages for c in m.get("tool_calls") or []]
    assert [c["function"]["name"] for c in calls] == ["create_task", "create_task"]


def test_agent_without_pulled_prompts_says_to_pull(data_root: Path) -> None:
    from tau_adapters.protocol import AdapterConfigError

    with pytest.raises(AdapterConfigError, match="tau data pull"):
        build_provider("tau3-llm", {"model": "openai/gpt-4.1", "data_dir": str(data_root)})
