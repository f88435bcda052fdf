"""`tau sdg generate` on τ³ domains through real litellm calls, answered by the fake model
via respx: τ³-format tasks that τ³'s own replay and the oracle score 1.0, and every
injected mistake rejected for the right reason on the τ³ environment."""

from __future__ import annotations

from typing import Any

import pytest

from tau_bench.agents.oracle import OracleAgent
from tau_bench.episode import run_task
from tau_bench.sdg.answers import ScenarioInstructions
from tau_bench.sdg.context import UserContext
from tau_bench.sdg.difficulty import Difficulty
from tau_bench.sdg.fake.model import INSTRUCTION_FAULTS, SCENARIO_FAULTS
from tau_bench.sdg.instruction import instruction_check
from tau_bench.sdg.pipeline import GenerateOptions, Generator
from tau_bench.sdg.sandbox import Validation
from tau_bench.sdg.stats import provenance
from tau_bench.sdg.targets import UnsupportedDomainError, as_target
from tau_bench.sdg.targets.tau3_check import check_tasks
from tau_bench.suites import load_domain
from tau_bench.users.scripted import ScriptedUser
from tests.conftest import TAU3_DATA_DIR
from tests.tau_bench.agents.fake_llm import FakeLLM
from tests.tau_bench.sdg.conftest import MODEL, use_fake_model
from tests.tau_bench.sdg.test_pipeline import EXPECTED_CALLS, EXPECTED_REASON

ENVS = ("tau3/airline", "tau3/retail")


def _pick(env: str, tau3_airline: Any, tau3_retail: Any) -> Any:
    return tau3_airline if env == "tau3/airline" else tau3_retail


def _owned(domain: Any, user_id: str) -> set[str]:
    user = as_target(domain).tables["users"][user_id]
    return set(user.get("orders", [])) | set(user.get("reservations", []))


@pytest.mark.parametrize("env", ENVS)
@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
async def test_tau3_tasks_are_in_tau3_format_and_score_one(
    fake_llm: FakeLLM,
    run_tau3_generation,
    tau3_airline: Any,
    tau3_retail: Any,
    env: str,
    difficulty: str,
) -> None:
    domain = _pick(env, tau3_airline, tau3_retail)
    family = env.split("/")[1]
    use_fake_model(fake_llm, domain)
    report, outcomes, path = await run_tau3_generation(env, difficulty, 4, max_concurrency=2)

    tasks = domain.load_tasks_file(path)  # what `tau run/tasks verify --tasks-file` read
    assert report.samples == 4 and len(tasks) == report.written >= 3
    assert {o.index for o in outcomes} == {0, 1, 2, 3}
    assert len({t.id for t in tasks}) == len(tasks)
    for i, task in enumerate(tasks):
        raw = task.model_dump()
        instructions = raw["user_scenario"]["instructions"]
        assert instructions["domain"] == family
        assert {"reason_for_call", "known_info", "unknown_info", "task_instructions"} <= set(
            instructions
        )
        crit = raw["evaluation_criteria"]
        assert crit["reward_basis"] == ["DB", "COMMUNICATE"] and crit["nl_assertions"] == []
        assert Difficulty(difficulty).accepts(len(crit["actions"]))
        prov = provenance(task)
        for action in crit["actions"]:
            assert action["requestor"] == "assistant"
            assert action["action_id"].startswith(raw["id"] + "_")
            for key in ("order_id", "reservation_id"):  # the sampled user's own records
                if key in action["arguments"] and action["name"] != "book_reservation":
                    assert action["arguments"][key] in _owned(domain, prov["user_id"])
        assert prov["env"] == env and prov["difficulty"] == difficulty and prov["model"] == MODEL
        assert prov["validation"]["initial_hash"] != prov["validation"]["final_hash"]
        # the DB hashes in the provenance are τ³'s (sha256 of the JSON dump)
        assert len(prov["validation"]["final_hash"]) == 64
        episode = await run_task(domain, task, i, OracleAgent(), ScriptedUser())
        assert episode.result.error is None
        assert episode.reward_value == 1.0, (task.id, episode.reward)
    assert all(c.ok for c in check_tasks(domain, tasks))
    # the instruction prompt asked for τ³'s structured instructions, with τ³'s examples
    instruction_requests = [r for r in fake_llm.requests if '"stage":"instruction"' in r.last_text]
    assert instruction_requests and "reason_for_call" in instruction_requests[0].last_text
    assert "τ³-bench" in instruction_requests[0].system


@pytest.mark.parametrize("env", ENVS)
async def test_tau3_rejects_what_the_model_gets_wrong(
    fake_llm: FakeLLM, run_tau3_generation, tau3_airline: Any, tau3_retail: Any, env: str
) -> None:
    domain = _pick(env, tau3_airline, tau3_retail)
    faults: list[str | None] = [None, *SCENARIO_FAULTS, *INSTRUCTION_FAULTS]
    n = 24
    options = GenerateOptions(env, Difficulty.medium, n, output_file=None, model=MODEL)  # type: ignore[arg-type]
    generator = Generator(options, domain)
    plan: dict[str, str | None] = {}
    for index in range(n):
        user = generator.context(index)[1].user_id
        plan.setdefault(user, faults[len(plan) % len(faults)])
    assert set(plan.values()) == set(faults)

    def pick(stage: str, view: dict[str, Any]) -> str | None:
        fault = plan.get(view["user_id"])
        return (
            fault
            if fault in (SCENARIO_FAULTS if stage == "scenario" else INSTRUCTION_FAULTS)
            else None
        )

    use_fake_model(fake_llm, domain, pick)
    report, outcomes, path = await run_tau3_generation(env, "medium", n, max_concurrency=3)

    for outcome in outcomes:
        fault = plan[outcome.user_id]
        assert outcome.reason == EXPECTED_REASON[fault], (fault, outcome.errors)
        assert outcome.usage.calls == EXPECTED_CALLS.get(fault, 1), fault
    tasks = domain.load_tasks_file(path)
    assert report.written == len(tasks) == sum(1 for o in outcomes if o.ok)
    assert all(c.ok for c in check_tasks(domain, tasks))
    for task in tasks:
        assert EXPECTED_REASON[plan[provenance(task)["user_id"]]] is None
        assert provenance(task)["validation"]["observations"]  # it ran in the τ³ sandbox
    tool_error = next(o for o in outcomes if plan[o.user_id] == "tool_error")
    assert any(e.startswith("action") and "Error:" in e for e in tool_error.errors)
    foreign = next(o for o in outcomes if plan[o.user_id] == "foreign_id")
    assert any("belongs to another user" in e for e in foreign.errors)
    # a leaked payment id in the τ³ instruction fields was caught and fixed on the retry
    leak = next(o for o in outcomes if plan[o.user_id] == "leak")
    methods = as_target(domain).tables["users"][leak.user_id]["payment_methods"]
    scenario = str(leak.task.model_dump()["user_scenario"])
    assert leak.ok and not any(m in scenario for m in methods)


def test_generation_is_refused_on_domains_without_user_sampling() -> None:
    for name in ("tau3/mock", "tau3/telecom"):
        domain = load_domain(name, TAU3_DATA_DIR)
        options = GenerateOptions(name, Difficulty.easy, 1, output_file=None, model=MODEL)  # type: ignore[arg-type]
        with pytest.raises(UnsupportedDomainError, match="supports tau3/airline and tau3/retail"):
            Generator(options, domain)


def test_tau3_instruction_check_wants_the_identity_in_known_info(tau3_retail: Any) -> None:
    view = {
        "user_id": "yusuf_rossi_9620",
        "name": {"first_name": "Yusuf", "last_name": "Rossi"},
        "email": "yusuf.rossi7301@example.com",
        "address": {"zip": "19122"},
        "payment_methods": [{"id": "credit_card_9513926", "source": "credit_card"}],
    }
    context = UserContext("retail", "yusuf_rossi_9620", view)
    validation = Validation(True, [], [], 1, 1, "a", "b")
    check = instruction_check(context, validation)
    good = ScenarioInstructions(
        known_info="You are Yusuf Rossi in zip code 19122.",
        reason_for_call="You want to cancel your pending order #W2378156.",
        task_instructions="You are brief.",
    )
    assert check(good) == []
    hidden = good.model_copy(
        update={
            "known_info": "You know your order number #W2378156.",
            "task_instructions": "You are Yusuf Rossi in 19122, and brief.",
        }
    )
    assert any(p.startswith("known_info must tell the customer") for p in check(hidden))
    leaky = good.model_copy(update={"reason_for_call": "You want credit_card_9513926 used."})
    assert any("internal ids" in p for p in check(leaky))
