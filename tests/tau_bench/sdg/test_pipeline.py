"""The whole pipeline through real litellm calls, answered by the fake model via respx.

The fake model reads each request's prompt (the sampled user's orders/reservations) and
answers from it, or makes the mistake a test assigns to that user; the pipeline must let
only valid tasks through, and every task it writes must score 1.0 with the oracle agent.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
import respx

from tau_bench.agents.oracle import OracleAgent
from tau_bench.domains import Domain
from tau_bench.episode import run_task
from tau_bench.llm import LLMAuthError
from tau_bench.sdg.difficulty import Difficulty
from tau_bench.sdg.fake.model import INSTRUCTION_FAULTS, SCENARIO_FAULTS, FakeModel
from tau_bench.sdg.output import read_jsonl, runs_path
from tau_bench.sdg.pipeline import GenerateOptions, Generator
from tau_bench.sdg.stats import provenance
from tau_bench.tasks import load_tasks
from tau_bench.users.scripted import ScriptedUser
from tau_bench.verify import verify_task
from tests.tau_bench.agents.fake_llm import FakeLLM, Reply
from tests.tau_bench.sdg.conftest import MODEL, use_fake_model

# What each injected mistake must end as (None: a task is written anyway).
EXPECTED_REASON: dict[str | None, str | None] = {
    None: None,
    "malformed": None,  # one retry with the parse error fixes it
    "malformed_always": "malformed",
    "unknown_tool": "unknown_tool",
    "foreign_id": "invalid_reference",
    "invalid_item": "invalid_reference",
    "missing_arg": "bad_arguments",
    "read_only": "no_change",
    "too_many": "difficulty_mismatch",
    "tool_error": "tool_error",
    "leak": None,
    "ungrounded": None,
    "malformed_instruction": None,
    "bad_always": "bad_instruction",
}
# Model calls one sample makes (scenario + retries/repair + instruction + retries).
EXPECTED_CALLS: dict[str | None, int] = {
    None: 2,
    "malformed": 3,
    "malformed_always": 2,
    "leak": 3,
    "ungrounded": 3,
    "malformed_instruction": 3,
    "bad_always": 3,
}


def _domain(env: str, airline: Domain, retail: Domain) -> Domain:
    return airline if env == "airline" else retail


def _owned_ids(domain: Domain, user_id: str) -> set[str]:
    user = domain.base_db.tables["users"][user_id]
    return set(user.get("orders", [])) | set(user.get("reservations", []))


def _assign_faults(
    domain: Domain, env: str, difficulty: str, n: int, faults: list[str | None]
) -> dict[str, str | None]:
    """Give each distinct user of the first `n` samples one fault, cycling through `faults`."""
    options = GenerateOptions(env, Difficulty(difficulty), n, output_file=None, model=MODEL)  # type: ignore[arg-type]
    generator = Generator(options, domain)
    plan: dict[str, str | None] = {}
    for index in range(n):
        user = generator.context(index)[1].user_id
        if user not in plan:
            plan[user] = faults[len(plan) % len(faults)]
    return plan


def _picker(plan: dict[str, str | None]):  # type: ignore[no-untyped-def]
    def pick(stage: str, view: dict[str, Any]) -> str | None:
        fault = plan.get(view["user_id"])
        allowed = SCENARIO_FAULTS if stage == "scenario" else INSTRUCTION_FAULTS
        return fault if fault in allowed else None

    return pick


@pytest.mark.parametrize("env", ["airline", "retail"])
@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
async def test_every_generated_task_scores_one_with_the_oracle(
    fake_llm: FakeLLM, run_generation, airline, retail, env: str, difficulty: str
) -> None:
    domain = _domain(env, airline, retail)
    use_fake_model(fake_llm, domain)
    report, outcomes, path = await run_generation(env, difficulty, 4, max_concurrency=2)

    tasks = load_tasks(path)
    assert report.samples == 4 and len(tasks) == report.written >= 3
    assert report.usage.calls == len(fake_llm.requests) and report.usage.cost > 0
    assert {o.index for o in outcomes} == {0, 1, 2, 3}
    for i, task in enumerate(tasks):
        prov = provenance(task)
        assert prov["env"] == env and prov["difficulty"] == difficulty and prov["model"] == MODEL
        assert prov["seed"] == 0 and prov["validation"]["ok"] is True and prov["scenario"]
        assert prov["validation"]["initial_hash"] != prov["validation"]["final_hash"]
        assert Difficulty(difficulty).accepts(len(task.actions)) and task.annotator == "sdg"
        for action in task.actions:  # the fake used this user's own records, from the prompt
            for key in ("order_id", "reservation_id"):
                if key in action.kwargs and action.name != "book_reservation":
                    assert action.kwargs[key] in _owned_ids(domain, task.user_id)
        episode = await run_task(domain, task, i, OracleAgent(), ScriptedUser())
        assert episode.result.error is None
        assert episode.reward_value == 1.0, (task.actions, episode.reward)
    # every request really carried the sampled user's data and the domain's tools
    first = fake_llm.requests[0]
    assert "<user_context>" in first.last_text and "get_user_details" in first.last_text
    assert first.body["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize("env", ["airline", "retail"])
async def test_only_valid_tasks_come_out_whatever_the_model_gets_wrong(
    fake_llm: FakeLLM, run_generation, airline, retail, env: str
) -> None:
    domain = _domain(env, airline, retail)
    faults: list[str | None] = [None, *SCENARIO_FAULTS, *INSTRUCTION_FAULTS]
    n = 24
    plan = _assign_faults(domain, env, "medium", n, faults)
    assert set(plan.values()) == set(faults)  # every mistake is exercised
    use_fake_model(fake_llm, domain, _picker(plan))
    report, outcomes, path = await run_generation(env, "medium", n, max_concurrency=3)

    for outcome in outcomes:
        fault = plan[outcome.user_id]
        assert outcome.reason == EXPECTED_REASON[fault], (fault, outcome.errors)
        assert outcome.usage.calls == EXPECTED_CALLS.get(fault, 1), fault
    tasks = load_tasks(path)
    written = sorted(provenance(t)["sample_index"] for t in tasks)
    assert written == [o.index for o in outcomes if o.ok]
    assert report.written == len(tasks) and report.samples == n
    assert sum(report.rejected.values()) == n - len(tasks)
    for i, task in enumerate(tasks):
        assert plan[task.user_id] not in ("unknown_tool", "foreign_id", "invalid_item", "too_many")
        assert verify_task(domain, task, i).reward.reward == 1.0
        assert domain.name == provenance(task)["env"]
    # the rejection records say why, in words the model could act on
    foreign = next(o for o in outcomes if plan[o.user_id] == "foreign_id")
    assert any("belongs to another user" in e for e in foreign.errors)
    unknown = next(o for o in outcomes if plan[o.user_id] == "unknown_tool")
    assert any("'issue_refund' is not a tool" in e for e in unknown.errors)
    # the retry after malformed JSON told the model what was wrong
    retries = [r for r in fake_llm.requests if "Your answer cannot be used" in r.last_text]
    assert any("not valid JSON" in r.last_text for r in retries)
    # the sidecar holds the run's counts
    runs = read_jsonl(runs_path(path))
    assert (
        len(runs) == 1 and runs[0]["samples"] == n and runs[0]["rejected"] == dict(report.rejected)
    )


@pytest.mark.parametrize("env", ["airline", "retail"])
async def test_repair_fixes_rejected_sequences_once(
    fake_llm: FakeLLM, run_generation, airline, retail, tmp_path, env: str
) -> None:
    domain = _domain(env, airline, retail)
    faults: list[str | None] = [
        "foreign_id",
        "unknown_tool",
        "missing_arg",
        "too_many",
        "read_only",
        "malformed_always",
    ]
    n = 8
    plan = _assign_faults(domain, env, "medium", n, faults)
    use_fake_model(fake_llm, domain, _picker(plan))
    rejected_file = tmp_path / "rejected.jsonl"
    report, outcomes, path = await run_generation(
        env, "medium", n, repair=True, max_concurrency=2, rejected_file=rejected_file
    )

    for outcome in outcomes:
        fault = plan[outcome.user_id]
        if fault == "malformed_always":
            assert outcome.reason == "malformed" and not outcome.repaired
            assert outcome.usage.calls == 2
        else:
            assert outcome.ok and outcome.repaired, (fault, outcome.errors)
            assert outcome.usage.calls == 3  # propose, repair, instruction
    tasks = load_tasks(path)
    assert len(tasks) == report.written == report.repaired
    for i, task in enumerate(tasks):
        prov = provenance(task)
        assert prov["repaired"] is True and len(prov["rejected_attempts"]) == 1
        assert prov["rejected_attempts"][0]["reason"] == EXPECTED_REASON[plan[task.user_id]]
        assert verify_task(domain, task, i).reward.reward == 1.0
    repairs = [r for r in fake_llm.requests if "Validation rejected this sequence" in r.last_text]
    assert len(repairs) == len(tasks)
    assert all("[" in r.last_text and "]" in r.last_text for r in repairs)  # reasons included
    rejects = read_jsonl(rejected_file)
    assert [r["reason"] for r in rejects] == ["malformed"] * (n - len(tasks))
    assert all(r["provenance"]["env"] == env and r["errors"] for r in rejects)


async def test_same_seed_same_samples_and_appending_continues(
    fake_llm: FakeLLM, run_generation, retail, tmp_path
) -> None:
    use_fake_model(fake_llm, retail)
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    await run_generation("retail", "easy", 3, output_file=a, seed=7)
    await run_generation("retail", "easy", 3, output_file=b, seed=7, max_concurrency=3)

    def strip(path) -> list[tuple[Any, ...]]:  # type: ignore[no-untyped-def]
        return [
            (t.user_id, t.instruction, json.dumps([x.model_dump() for x in t.actions]))
            for t in sorted(load_tasks(path), key=lambda t: provenance(t)["sample_index"])
        ]

    assert strip(a) == strip(b) and len(strip(a)) == 3
    await run_generation("retail", "easy", 2, output_file=a, seed=7)
    indices = [provenance(t)["sample_index"] for t in load_tasks(a)]
    assert sorted(indices) == [0, 1, 2, 3, 4]
    assert len(read_jsonl(runs_path(a))) == 2


async def test_model_errors_reject_and_bad_credentials_stop_the_run(
    fake_llm: FakeLLM, run_generation
) -> None:
    fake_llm.brain = lambda request: Reply(status=400, error="model not found")
    report, outcomes, path = await run_generation("retail", "easy", 3)
    assert report.rejected == {"llm_error": 3} and report.written == 0
    assert load_tasks(path) == []
    assert all("model not found" in o.errors[0] for o in outcomes)

    fake_llm.brain = lambda request: Reply(status=401, error="invalid api key sk-test-openai-0000")
    with pytest.raises(LLMAuthError) as exc:
        await run_generation("retail", "easy", 3)
    assert "sk-test-openai-0000" not in str(exc.value)


async def test_concurrency_is_capped_at_max_concurrency(
    llm_env: None, run_generation, retail
) -> None:
    model = FakeModel(retail)
    in_flight = peak = 0
    full = asyncio.Event()
    cap = 3

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if in_flight == cap:
            full.set()
        await asyncio.wait_for(full.wait(), timeout=20)  # hold until `cap` calls overlap
        in_flight -= 1
        body = json.loads(request.content)
        text = model.reply(body["messages"])
        return httpx.Response(
            200,
            json={
                "id": "x",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
            },
        )

    with respx.mock(assert_all_mocked=True) as router:
        router.post("https://api.openai.com/v1/chat/completions").mock(side_effect=handler)
        report, _, _ = await run_generation("retail", "medium", 6, max_concurrency=cap)
    assert peak == cap and report.samples == 6


@pytest.mark.parametrize("other", ["tasks.jsonl", "tasks.runs.jsonl", "link.jsonl"])
async def test_generate_from_python_refuses_rejects_written_into_the_tasks_files(
    fake_llm: FakeLLM, retail, tmp_path, other: str
) -> None:
    from tau_bench.sdg.pipeline import generate

    out = tmp_path / "tasks.jsonl"
    out.write_text("")
    (tmp_path / "link.jsonl").symlink_to(out)
    use_fake_model(fake_llm, retail)
    options = GenerateOptions(
        env="retail",
        difficulty=Difficulty("easy"),
        num_samples=2,
        output_file=out,
        model=MODEL,
        rejected_file=tmp_path / other,
    )
    with pytest.raises(ValueError, match="give the rejected samples a file of their own"):
        await generate(options, domain=retail)
    assert out.read_text() == "" and not fake_llm.requests  # refused before any model call
