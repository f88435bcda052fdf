"""LLM error analysis through real litellm calls answered by respx (no network)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from typer.testing import CliRunner

from tau_adapters.protocol import Usage
from tau_bench import llm
from tau_bench.analysis import analyze as analyze_mod
from tau_bench.analysis.analyze import (
    analyze_runs,
    episode_prompt,
    failed_records,
    parse_reply,
)
from tau_bench.analysis.loading import Run, load_run
from tau_bench.cli.app import app
from tau_bench.fakes.openai_server import ChatReply, ChatRequest, completion_body, error_body
from tau_bench.llm import Completion, LLMConfig
from tests.tau_bench.analysis.conftest import Runs

API_KEY = "sk-test-analysis-0000"
OPENAI_URL = "https://api.openai.com/v1/chat/completions"


Reply = ChatReply  # the fake OpenAI server's reply type: one encoder for every fake


@dataclass
class FakeJudge:
    """OpenAI's chat endpoint behind respx; `brain(body)` decides each reply."""

    brain: Callable[[dict[str, Any]], Reply] = lambda body: Reply("{}")
    requests: list[dict[str, Any]] = field(default_factory=list)

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        reply = self.brain(body)
        if reply.status != 200:
            return httpx.Response(reply.status, json=error_body(reply))
        judged = replace(reply, usage=reply.usage or (1000, 50))
        return httpx.Response(
            200, json=completion_body(judged, ChatRequest(body), len(self.requests))
        )


@pytest.fixture
def fake_judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeJudge]:
    """A dummy key, no waits between retries, every HTTP call answered by respx."""
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setattr(
        llm.config, "DEFAULT_RETRY", llm.RetryPolicy(initial_wait=0.0, max_wait=0.0, jitter=0.0)
    )
    judge = FakeJudge()
    with respx.mock(assert_all_mocked=True) as router:
        router.post(OPENAI_URL).mock(side_effect=judge.handle)
        yield judge


GOOD = {
    "fault_author": "agent",
    "fault_type": "goal_partially_completed",
    "description": "The agent never booked the flight.",
}


def judge(body: dict[str, Any]) -> Reply:
    """Per failed episode of the sloppy run (keyed by its user): a different behaviour."""
    messages = body["messages"]
    prompt = messages[1]["content"]
    retry = len(messages) > 2  # the follow-up after a malformed reply
    if "mia_li_3668" in prompt:  # task 0: a clean answer
        return Reply(text=json.dumps(GOOD))
    if "olivia_gonzalez_2305" in prompt:  # task 1: wrong first, then right (in a fence)
        if retry:
            assert "not valid" in messages[-1]["content"]
            return Reply(text="```json\n" + json.dumps({**GOOD, "fault_author": "user"}) + "\n```")
        return Reply(text='{"fault_author": "the agent", "fault_type": "other"}')
    if "omar_davis_3817" in prompt:  # task 2: never valid
        return Reply(text="I think the agent was wrong.")
    return Reply(status=400, error=f"bad request: unsupported, key {API_KEY}")


@pytest.fixture
def sloppy(runs: Runs) -> Run:
    return load_run(runs.sloppy)


def test_failed_records_are_the_scored_failures(sloppy: Run) -> None:
    keys = [(r.task_id, r.trial) for r in failed_records(sloppy)]
    assert keys == [(0, 0), (1, 1), (2, 0), (3, 1)]
    assert [(r.task_id, r.trial) for r in failed_records(sloppy, 2)] == [(0, 0), (1, 1)]


def test_prompt_has_what_a_judge_needs(sloppy: Run) -> None:
    prompt = episode_prompt(failed_records(sloppy)[0])
    assert "mia_li_3668" in prompt and "book_reservation(" in prompt
    assert "final database differs" in prompt and "reservations/HATHAT" in prompt
    assert "# The agent's policy" in prompt and "[agent] Your request has been handled." in prompt


async def test_classification_retries_once_then_gives_up(
    fake_judge: FakeJudge, sloppy: Run
) -> None:
    fake_judge.brain = judge
    config = LLMConfig(model="openai/gpt-4o-mini")
    analysis = await analyze_runs([sloppy], config, max_concurrency=2)
    by_task = {r.task_id: r for r in analysis.results}
    assert by_task[0].status == "classified" and by_task[0].attempts == 1
    assert (by_task[0].fault_author, by_task[0].fault_type) == ("agent", "goal_partially_completed")
    assert by_task[1].status == "classified" and by_task[1].attempts == 2
    assert by_task[1].fault_author == "user" and by_task[1].error is None
    assert by_task[2].status == "unclassified" and by_task[2].attempts == 2
    assert str(by_task[2].error).startswith("malformed reply: not JSON")
    assert by_task[3].status == "unclassified"
    assert str(by_task[3].error).startswith("bad_request")
    assert API_KEY not in json.dumps(analysis.to_dict())
    # structured output was asked for, with the schema
    body = fake_judge.requests[0]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["required"] == [
        "fault_author",
        "fault_type",
        "description",
    ]
    summary = analysis.summary()
    assert summary["classified"] == 2 and summary["unclassified"] == 2
    assert summary["fault_author"] == {"agent": 1, "user": 1}
    assert summary["cost"] > 0
    assert len(fake_judge.requests) == 1 + 2 + 2 + 1  # a 400 is not retried


async def test_concurrency_is_bounded(sloppy: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    in_flight = peak = 0
    release = asyncio.Event()
    arrived = asyncio.Event()

    async def slow_complete(config: Any, messages: Any, **_: Any) -> Completion:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if in_flight == 2:
            arrived.set()
        await release.wait()
        in_flight -= 1
        return Completion(message={"role": "assistant", "content": json.dumps(GOOD)}, usage=Usage())

    monkeypatch.setattr(analyze_mod, "complete", slow_complete)
    task = asyncio.create_task(
        analyze_runs([sloppy], LLMConfig(model="openai/gpt-4o"), max_concurrency=2)
    )
    await arrived.wait()
    for _ in range(5):  # let any third call start, if the bound were broken
        await asyncio.sleep(0)
    assert in_flight == 2
    release.set()
    analysis = await task
    assert peak == 2 and len(analysis.results) == 4
    with pytest.raises(ValueError):
        await analyze_runs([sloppy], LLMConfig(model="m"), max_concurrency=0)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            '{"fault_author": "agent", "fault_type": "other", "description": "x", "extra": 1}',
            "extra",
        ),
        ('{"fault_author": "robot", "fault_type": "other", "description": "x"}', "fault_author"),
        ('{"fault_author": "agent", "fault_type": "other", "description": ""}', "description"),
        ("[1]", "object"),
    ],
)
def test_replies_are_validated(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_reply(text)


def test_cli_writes_json_and_prints_summary(
    fake_judge: FakeJudge, runs: Runs, tmp_path: Path
) -> None:
    fake_judge.brain = judge
    out = tmp_path / "analysis.json"
    result = CliRunner().invoke(
        app,
        [
            "analyze",
            str(runs.sloppy),
            "--model",
            "openai/gpt-4o-mini",
            "--max-num-failed-results",
            "3",
            "--max-concurrency",
            "3",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "3 of 4 failed episode(s) analyzed with openai/gpt-4o-mini" in result.output
    assert "Fault author" in result.output and "goal_partially_completed" in result.output
    data = json.loads(out.read_text())
    assert data["failed_episodes"] == {"sloppy": 4}
    assert [r["task_id"] for r in data["results"]] == [0, 1, 2]
    assert data["summary"]["unclassified"] == 1
