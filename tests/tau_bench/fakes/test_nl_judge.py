"""The fake NL judge answers our τ³ judge (and the original's prompt shape) with "met"."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from tau_bench.fakes.nl_judge import all_met
from tau_bench.fakes.openai_server import OpenAIServer
from tau_bench.tau3.llm_judge import LLMJudge
from tau_bench.tau3.messages import Message

ASSERTIONS = ["Agent refunds $10", "Agent says the user's order can't be changed"]


def _root(tmp_path: Path) -> Path:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "nl_judge_system_prompt.txt").write_text("grade each outcome", encoding="utf-8")
    (prompts / "nl_judge_user_prompt.txt").write_text(
        "conversation:\n{trajectory_str}\n\nexpectedOutcomes:\n{nl_assertions}\n",
        encoding="utf-8",
    )
    return tmp_path


def test_our_judge_through_litellm_gets_every_assertion_met(tmp_path: Path) -> None:
    with OpenAIServer(all_met) as server:
        judge = LLMJudge(
            "openai/gpt-4.1-2025-04-14", root=_root(tmp_path), api_base=server.base_url
        )
        trajectory = [Message(role="user", content="hi"), Message(role="assistant", content="ok")]
        checks, usage = asyncio.run(judge.ajudge(trajectory, ASSERTIONS))
    assert [c.to_dict()["nl_assertion"] for c in checks] == ASSERTIONS
    assert all(c.met for c in checks)
    assert usage["model"] == "openai/gpt-4.1-2025-04-14" and usage["calls"] == 1


def test_a_request_that_is_not_a_judge_request_is_refused() -> None:
    with OpenAIServer(all_met) as server:
        answer = httpx.post(
            f"{server.base_url}/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hello"}]},
            timeout=10,
        )
    assert answer.status_code == 400
