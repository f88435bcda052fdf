"""Unit tests of the τ³ core: toolkit binding texts, serialisation, hashes, env, evaluator."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from pydantic import BaseModel

from tau_bench.tau3.domain import get_domain, load_domain
from tau_bench.tau3.environment import Environment
from tau_bench.tau3.evaluator import evaluate
from tau_bench.tau3.judge import AssumeMetJudge, JudgeError, NLCheck, parse_verdict
from tau_bench.tau3.messages import Message
from tau_bench.tau3.replay import replay_task
from tau_bench.tau3.serialise import Dumped, to_content
from tau_bench.tau3.store import db_dump, db_hash, hash_json
from tau_bench.tau3.tasks import load_tasks
from tau_bench.tau3.toolkit import IdSource, ToolKind, Toolkit, pydantic_text, tool


class DemoTools(Toolkit):
    @tool(ToolKind.WRITE)
    def b_write(self, a: str, b: str, c: str = "x") -> str:
        return a + b + c

    @tool(ToolKind.GENERIC)
    def a_generic(self) -> str:
        return "ok"

    def helper(self, n: int) -> bool:
        return n > 0


def test_toolkit_lists_tools_in_definition_order_with_kinds() -> None:
    assert DemoTools.tool_names() == ["b_write", "a_generic"]
    assert DemoTools.mutates_state("b_write") and not DemoTools.mutates_state("a_generic")
    assert DemoTools.tool_kind("a_generic") is ToolKind.GENERIC


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ({"a": "1"}, "DemoTools.b_write() missing 1 required positional argument: 'b'"),
        ({}, "DemoTools.b_write() missing 2 required positional arguments: 'a' and 'b'"),
        (
            {"a": "1", "b": "2", "z": 1},
            "DemoTools.b_write() got an unexpected keyword argument 'z'",
        ),
        ({"self": 1}, "DemoTools.b_write() got multiple values for argument 'self'"),
    ],
)
def test_argument_errors_are_cpython_312_texts(args: dict[str, object], text: str) -> None:
    with pytest.raises(TypeError) as info:
        DemoTools(None).call_tool("b_write", args)
    assert str(info.value) == text


def test_helpers_are_not_tools_but_env_functions() -> None:
    kit = DemoTools(None)
    with pytest.raises(ValueError, match=r"^Tool 'helper' not found\.$"):
        kit.call_tool("helper", {"n": 1})
    assert kit.call_function("helper", {"n": 1}) is True


def test_pydantic_error_urls_name_2_12() -> None:
    assert pydantic_text("visit https://errors.pydantic.dev/2.14/v/missing") == (
        "visit https://errors.pydantic.dev/2.12/v/missing"
    )


def test_deterministic_ids_count_in_draw_order() -> None:
    ids = IdSource(deterministic=True)
    assert [str(ids.uuid4())[:8] for _ in range(2)] == ["00000001", "00000002"]
    assert str(IdSource().uuid4()) != str(IdSource().uuid4())


class _M(BaseModel):
    x: float
    d: date


def test_serialisation_rules() -> None:
    assert to_content("raw ✓") == "raw ✓"
    assert to_content({"a": 8.7, "b": True, "c": None}) == '{"a": "8.7", "b": "True", "c": null}'
    assert to_content(_M(x=1, d=date(2025, 2, 25))) == '{"x": 1.0, "d": "2025-02-25"}'
    assert to_content({"m": Dumped({"n": 2})}) == '{"m": {"n": 2}}'
    assert to_content([date(2025, 2, 28), "é"]) == '["2025-02-28", "\\u00e9"]'


def test_mock_hash_worked_example(data_root: Path) -> None:
    env = Environment(load_domain("mock", data_root))
    assert env.agent_db_hash() == "107f83a70b7bf4f616e283b0b0b8451346fe7681173398d4498a1ec15c5fdfc6"
    assert env.user_db_hash() == "4cf3d22eed6962ba202c8738421d8a2286d2b5a0cad1372922c928be09ccbfac"
    env.call("create_task", {"user_id": "user_1", "title": "Important Meeting"})
    assert env.agent_db_hash() == "3b82583d5c026d816c5a32430fb3ab8d42b72ec2b91cd5cafaab817e0e05b00c"


def test_incremental_table_hash_equals_full_hash(data_root: Path) -> None:
    loaded = load_domain("airline", data_root)
    env = Environment(loaded)
    pristine = env.agent_db_hash()
    assert pristine == hash_json(db_dump(env.tools.db))
    task = next(
        t
        for t in load_tasks(data_root, "airline")
        if any(a.name == "book_reservation" for a in t.expected_actions)
    )
    for a in task.expected_actions:
        env.call(a.name, a.arguments, a.requestor)
    assert "HATHAT" in env.tools.db["reservations"]
    assert env.agent_db_hash() == hash_json(db_dump(env.tools.db)) != pristine
    assert Environment(loaded).agent_db_hash() == pristine  # episodes are isolated


def test_routing_errors_never_raise(data_root: Path) -> None:
    env = Environment(load_domain("airline", data_root))
    assert env.call("nope", {}).content == "Error: Tool 'nope' not found."
    assert env.call("get_user_details", {"user_id": 123}).content == "Error: User 123 not found"
    user = env.call("get_user_details", {"user_id": "x"}, requestor="user")
    assert (user.content, user.error) == ("Error: User tools not available", True)
    clash = env.call("calculate", {"expression": "1", "requestor": "x"})
    assert clash.content == (
        "Error: tau2.environment.environment.Environment.make_tool_call() got multiple "
        "values for keyword argument 'requestor'"
    )
    assert env.call("calculate", {"expression": "2 ** 10"}).content == "1024.0"
    assert env.user_db_hash() is None


def test_mock_user_tool_side(data_root: Path) -> None:
    env = Environment(load_domain("mock", data_root))
    assert (
        env.call("check_notifications", {}).content
        == "Error: Tool 'check_notifications' not found."
    )
    inbox = env.call("check_notifications", {}, requestor="user")
    assert inbox.content.startswith('[{"notification_id": "notif_1", ') and not inbox.error
    assert env.call(
        "dismiss_notification", {"notification_id": "notif_1"}, requestor="user"
    ).content == ("Notification notif_1 dismissed")
    assert Environment(load_domain("mock", data_root)).user_db_hash() != env.user_db_hash()


def test_splits_and_defaults(data_root: Path) -> None:
    assert len(load_tasks(data_root, "airline")) == 50
    assert len(load_tasks(data_root, "airline", split="test")) == 20
    mock = load_tasks(data_root, "mock")
    assert len(mock) == 10
    assert mock[0].reward_basis == ["DB", "COMMUNICATE"]
    with pytest.raises(ValueError, match="valid splits: train, test, base"):
        load_tasks(data_root, "retail", split="nope")
    with pytest.raises(ValueError, match="unknown τ³ domain"):
        get_domain("nope")


def test_policies_and_schemas_are_read_from_data(data_root: Path) -> None:
    loaded = load_domain("retail", data_root)
    names = [s["function"]["name"] for s in loaded.tool_schemas()]
    assert names == loaded.spec.agent_toolkit.tool_names()
    assert loaded.policy().strip()
    mock = load_domain("mock", data_root)
    assert [s["function"]["name"] for s in mock.user_tool_schemas() or []] == [
        "check_notifications",
        "dismiss_notification",
    ]


def test_premature_termination_scores_zero(data_root: Path) -> None:
    loaded = load_domain("mock", data_root)
    task = load_tasks(data_root, "mock")[0]
    ev = evaluate(loaded, task, [], "max_steps")
    assert ev.reward == 0.0 and ev.reward_basis is None
    assert ev.info == {"note": "Simulation terminated prematurely. Termination reason: max_steps"}


class _BrokenJudge:
    def judge(self, trajectory: list[Message], assertions: list[str]) -> list[NLCheck]:
        raise TimeoutError("judge timed out")


def test_judge_failure_is_an_error_never_a_pass(data_root: Path) -> None:
    loaded = load_domain("retail", data_root)
    task = next(
        t
        for t in load_tasks(data_root, "retail")
        if "NL_ASSERTION" in t.reward_basis
        and t.evaluation_criteria is not None
        and t.evaluation_criteria.nl_assertions
    )
    replay = replay_task(loaded, task, _BrokenJudge())
    assert replay.evaluation is None and "judge timed out" in (replay.error or "")
    ok = replay_task(loaded, task, AssumeMetJudge())
    assert ok.evaluation is not None and ok.evaluation.nl_assertions
    assert all("assume-met" in c["justification"] for c in ok.evaluation.nl_assertions)
    with pytest.raises(JudgeError, match="needs an NL judge"):
        evaluate(loaded, task, replay.trajectory, "agent_stop")


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '{"results": 3}',
        '{"results": [{"expectedOutcome": "a", "reasoning": "r", "metExpectation": "yes"}]}',
        '{"results": ' + "[" * 100_000 + "]" * 100_000 + "}",  # RecursionError in json
    ],
)
def test_unparseable_verdicts_raise(text: str) -> None:
    with pytest.raises(JudgeError):
        parse_verdict(text)


def test_failure_report_names_records_and_missing_actions(data_root: Path) -> None:
    loaded = load_domain("airline", data_root)
    task = next(
        t
        for t in load_tasks(data_root, "airline")
        if any(a.name == "cancel_reservation" for a in t.expected_actions)
    )
    trajectory = [Message(role="assistant", content="Hi! How can I help you today?")]
    ev = evaluate(loaded, task, trajectory, "user_stop")
    assert ev.reward == 0.0 and ev.db_check == {"db_match": False, "db_reward": 0.0}
    report = ev.failure_report()
    assert "DB differs from gold" in report
    assert "['status']: None != 'cancelled'" in report
    assert "action not performed: cancel_reservation" in report


def test_db_hash_of_plain_and_model_dbs_agree() -> None:
    class Tiny(BaseModel):
        items: dict[str, int]

    assert db_hash(Tiny(items={"b": 1, "a": 2})) == db_hash({"items": {"a": 2, "b": 1}})


def test_bench_table_for_mock(data_root: Path) -> None:
    from tau_bench.tau3.bench import format_table, run_bench

    rows = run_bench(data_root, ["mock"])
    assert rows[0]["tasks"] == 10 and rows[0]["passed"] == 8
    assert "mock" in format_table(rows)
