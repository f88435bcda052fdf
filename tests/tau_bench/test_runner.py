"""The async runner: scoring, errors, concurrency bounds, resume, interruption."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tau_adapters import registry
from tau_adapters.protocol import AdapterError, AgentTurn, SessionContext, ToolCall, UserTurn
from tau_adapters.registry import SimpleProvider
from tau_bench.agents.oracle import OracleAgent
from tau_bench.config import RunConfig, RunConfigError, episode_seed
from tau_bench.results_log import read_log
from tau_bench.runner import Runner, prepare_run
from tau_bench.users.prompts import GREETING
from tests.conftest import DATA_DIR
from tests.tau_bench.agents.fake_llm import (
    FakeLLM,
    Reply,
    Request,
    fake_llm,  # noqa: F401
    llm_env,  # noqa: F401
)

# Airline 13 scores 1.0 with today's stub tools; with the full tools every id does.
IDS = [13, 0, 1]


@pytest.fixture
def register():
    names: list[str] = []

    def _register(name: str, builder: Any) -> None:
        registry.register(name, builder)
        names.append(name)

    yield _register
    for name in names:
        registry._extra.pop(name, None)


def make_config(tmp_path: Path, **kw: Any) -> RunConfig:
    base: dict[str, Any] = dict(
        env="airline",
        agent_strategy="oracle",
        user_strategy="scripted",
        task_ids=IDS,
        log_dir=str(tmp_path),
        data_dir=str(DATA_DIR),
        run_name="t",
        quiet=True,
    )
    base.update(kw)
    return RunConfig(**base)


async def run_config(config: RunConfig, observer: Any = None) -> Any:
    return await Runner(prepare_run(config), observer).run()


def results_json(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text())


class Hooked(OracleAgent):
    """The oracle, with a per-test hook before each `send` (and start/close counting)."""

    def __init__(self, state: Any) -> None:
        super().__init__()
        self.state = state
        self.key: tuple[Any, int] = (None, 0)

    async def start(self, session: SessionContext) -> None:
        self.key = (session.task_id, session.trial)
        await self.state.on_start(self)
        await super().start(session)

    async def send(self, turn: Any) -> AgentTurn:
        await self.state.on_send(self)
        return await super().send(turn)

    async def close(self) -> None:
        await self.state.on_close(self)
        await super().close()


class State:
    async def on_start(self, agent: Hooked) -> None:
        pass

    async def on_send(self, agent: Hooked) -> None:
        pass

    async def on_close(self, agent: Hooked) -> None:
        pass


def hooked_builder(state: State) -> Any:
    return lambda options: SimpleProvider(lambda: Hooked(state))


# -- scoring and records ------------------------------------------------------------------


async def test_oracle_run_scores_and_writes_all_files(tmp_path):
    outcome = await run_config(make_config(tmp_path, num_trials=2, max_concurrency=3))
    summary = outcome.summary
    assert summary["episodes_done"] == 6 and summary["errors"] == 0
    assert summary["avg_reward"] == 1.0
    assert summary["pass_hat_k"] == {"1": 1.0, "2": 1.0}
    results = results_json(tmp_path / "t.json")
    assert [(e["task_id"], e["trial"]) for e in results] == [
        (13, 0),
        (0, 0),
        (1, 0),
        (13, 1),
        (0, 1),
        (1, 1),
    ]
    assert all(e["reward"] == 1.0 for e in results)
    first = results[0]
    assert first["info"]["reward_info"]["info"]["r_actions"] == 1.0
    tasks = json.loads((DATA_DIR / "airline" / "tasks" / "test.json").read_text())
    assert first["info"]["task"] == tasks[13]
    assert first["traj"][0]["role"] == "system"
    saved = json.loads((tmp_path / "t.summary.json").read_text())
    assert saved["avg_reward"] == 1.0 and saved["files"]["results"].endswith("t.json")
    log = read_log(tmp_path / "t.jsonl")
    assert log.header["task_data_hash"] == outcome.plan.task_hash
    record = log.records[(13, 0)]
    assert record.user_strategy == "scripted" and record.user_model is None
    assert record.turns and record.turns[0]["role"] == "user"
    assert record.reward_info and "db_diff" in record.reward_info
    assert record.agent_usage["cost"] == 0.0 and record.duration > 0


async def test_an_outcome_and_its_records_print_short(tmp_path):
    """`asyncio.run` (Python 3.11) formats the main task's result when it restores the
    SIGINT handler: a repr that grew with the trajectories cost seconds per big run."""
    outcome = await run_config(make_config(tmp_path, num_trials=2))
    record = outcome.records[0]
    assert repr(record) == (
        "EpisodeRecord(task_id=13, trial=0, reward=1.0, stop_reason='terminate_tool', error=None)"
    )
    assert repr(outcome) == "RunOutcome(run_name='t', records=6, ran=6, interrupted=False)"


async def test_failing_adapter_is_recorded_and_the_others_scored(tmp_path, register):
    class Flaky(State):
        async def on_send(self, agent: Hooked) -> None:
            if agent.key[0] == 0:
                raise AdapterError("upstream unavailable after retries", retryable=True)

    register("flaky", hooked_builder(Flaky()))

    def broken_factory() -> Any:
        raise RuntimeError("cannot build adapter")

    outcome = await run_config(make_config(tmp_path, agent_strategy="flaky", num_trials=2))
    s = outcome.summary
    assert s["errors"] == 2 and s["episodes_scored"] == 4
    assert s["error_kinds"] == {"adapter_error": 2}
    assert s["avg_reward"] == 1.0  # errors are not failures
    assert s["pass_hat_k"]["2"] == 1.0
    log = read_log(tmp_path / "t.jsonl")
    err = log.records[(0, 1)].error
    assert err and err["retryable"] and "unavailable" in err["message"]
    assert [e["task_id"] for e in results_json(tmp_path / "t.json")] == [13, 1, 13, 1]

    register("broken", lambda options: SimpleProvider(broken_factory))
    outcome = await run_config(
        make_config(tmp_path, agent_strategy="broken", run_name="b", task_ids=[13])
    )
    assert outcome.summary["errors"] == 1
    assert outcome.records[0].error["source"] == "agent"
    assert "cannot build adapter" in outcome.records[0].error["message"]


async def test_adapter_receives_config_and_agent_options(tmp_path, register):
    seen: list[dict[str, Any]] = []

    def builder(options: Any) -> Any:
        seen.append(dict(options))
        return SimpleProvider(OracleAgent)

    register("capture", builder)
    await run_config(
        make_config(
            tmp_path,
            agent_strategy="capture",
            model="openai/m",
            temperature=0.5,
            task_ids=[13],
            agent_options={"agent_id": "a1", "session_params": ["x={task_id}"]},
        )
    )
    assert len(seen) == 1  # one provider per run
    opts = seen[0]
    assert opts["agent_id"] == "a1" and opts["session_params"] == ["x={task_id}"]
    assert opts["model"] == "openai/m" and opts["model_provider"] == "openai"
    assert opts["temperature"] == 0.5 and opts["env"] == "airline"


async def test_scripted_user_affirmative_and_tool_call_cap(tmp_path, register):
    class Asker:
        def __init__(self) -> None:
            self.n = 0

        async def start(self, session: SessionContext) -> None:
            pass

        async def send(self, turn: Any) -> AgentTurn:
            self.n += 1
            if self.n == 1:
                calls = [
                    ToolCall(id="a", name="get_user_details", arguments={"user_id": "mia_li_3668"}),
                    ToolCall(id="b", name="get_user_details", arguments={"user_id": "x"}),
                ]
                return AgentTurn(tool_calls=calls)
            if isinstance(turn, UserTurn) and turn.text == "Absolutely.":
                return AgentTurn(messages=["Done."], end_conversation=True)
            return AgentTurn(messages=["Shall I go ahead?"])

        async def close(self) -> None:
            pass

    register("asker", lambda options: SimpleProvider(Asker))
    outcome = await run_config(
        make_config(
            tmp_path,
            agent_strategy="asker",
            task_ids=[13],
            user_affirmative="Absolutely.",
            max_tool_calls_per_turn=1,
        )
    )
    record = outcome.records[0]
    assert {"role": "user", "content": "Absolutely."} in record.messages
    assert record.stop_reason == "agent_end"
    assert record.dropped_tool_calls == 1


async def test_tasks_file(tmp_path):
    tasks = json.loads((DATA_DIR / "airline" / "tasks" / "test.json").read_text())
    path = tmp_path / "mine.json"
    path.write_text(json.dumps([tasks[13], tasks[13]]))
    outcome = await run_config(
        make_config(tmp_path, tasks_file=str(path), task_ids=None, end_index=-1)
    )
    assert [r.task_id for r in outcome.records] == [0, 1]
    assert outcome.summary["avg_reward"] == 1.0


def test_bad_selections_are_config_errors(tmp_path):
    with pytest.raises(RunConfigError, match="task id 50 out of range"):
        prepare_run(make_config(tmp_path, task_ids=[1, 50]))
    with pytest.raises(RunConfigError, match="empty task range"):
        prepare_run(make_config(tmp_path, task_ids=None, start_index=60))
    assert not list(tmp_path.iterdir())  # nothing written


async def test_unknown_strategies_fail_before_writing(tmp_path):
    with pytest.raises(RunConfigError, match="unknown agent strategy"):
        await run_config(make_config(tmp_path, agent_strategy="no-such-agent"))
    with pytest.raises(RunConfigError, match="unknown user strategy"):
        await run_config(make_config(tmp_path, user_strategy="no-such-user"))
    assert not list(tmp_path.iterdir())


# -- concurrency ----------------------------------------------------------------------------


class Gate(State):
    """Counts live episodes; holds them all until `open_at` are live at once."""

    def __init__(self, open_at: int) -> None:
        self.open_at = open_at
        self.live = 0
        self.max_live = 0
        self.opened = asyncio.Event()

    async def on_start(self, agent: Hooked) -> None:
        self.live += 1
        self.max_live = max(self.max_live, self.live)
        if self.live >= self.open_at:
            self.opened.set()
        await self.opened.wait()

    async def on_send(self, agent: Hooked) -> None:
        await asyncio.sleep(0)

    async def on_close(self, agent: Hooked) -> None:
        self.live -= 1


async def test_max_concurrency_bounds_live_episodes(tmp_path, register):
    gate = Gate(open_at=3)
    register("gated", hooked_builder(gate))
    config = make_config(tmp_path, agent_strategy="gated", num_trials=4, max_concurrency=3)
    # wait_for only turns a deadlock (a bound below 3) into a failure.
    outcome = await asyncio.wait_for(run_config(config), timeout=30)
    assert gate.max_live == 3
    assert outcome.summary["episodes_scored"] == 12


async def test_provider_limit_bounds_live_episodes(tmp_path, register):
    gate = Gate(open_at=2)
    register("gated", hooked_builder(gate))
    config = make_config(
        tmp_path,
        agent_strategy="gated",
        num_trials=3,
        max_concurrency=5,
        provider_limits={"gated": 2},
    )
    outcome = await asyncio.wait_for(run_config(config), timeout=30)
    assert gate.max_live == 2
    assert outcome.summary["episodes_scored"] == 9


async def test_hundreds_of_live_episodes(tmp_path, register):
    gate = Gate(open_at=200)
    register("gated", hooked_builder(gate))
    config = make_config(
        tmp_path, agent_strategy="gated", task_ids=None, num_trials=6, max_concurrency=200
    )
    outcome = await asyncio.wait_for(run_config(config), timeout=60)
    assert gate.max_live == 200
    assert outcome.summary["episodes_scored"] == 300 and outcome.summary["avg_reward"] == 1.0
    assert len(read_log(tmp_path / "t.jsonl").records) == 300


# -- resume -----------------------------------------------------------------------------------


class Crash(State):
    """Raises KeyboardInterrupt (a killed process) on one (task, trial) while armed."""

    def __init__(self, at: tuple[int, int]) -> None:
        self.at = at
        self.armed = True

    async def on_send(self, agent: Hooked) -> None:
        if self.armed and agent.key == self.at:
            raise KeyboardInterrupt


def test_resume_after_crash_equals_uninterrupted_run(tmp_path, register):
    crash = Crash(at=(0, 1))
    register("crashy", hooked_builder(crash))
    full_dir, crash_dir = tmp_path / "full", tmp_path / "crash"
    crash.armed = False
    asyncio.run(run_config(make_config(full_dir, agent_strategy="crashy", num_trials=2)))

    crash.armed = True
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(run_config(make_config(crash_dir, agent_strategy="crashy", num_trials=2)))
    # what finished before the crash is on disk, and the derived files were written
    assert sorted(read_log(crash_dir / "t.jsonl").records) == [(0, 0), (1, 0), (13, 0), (13, 1)]
    partial = json.loads((crash_dir / "t.summary.json").read_text())
    assert partial["interrupted"] and partial["episodes_done"] == 4

    crash.armed = False
    resumed = make_config(
        crash_dir, agent_strategy="crashy", num_trials=2, resume=str(crash_dir / "t.jsonl")
    )
    plan = prepare_run(resumed)
    assert plan.pending == [(0, 1), (1, 1)]
    outcome = asyncio.run(Runner(plan).run())
    assert outcome.ran == 2
    assert (crash_dir / "t.json").read_text() == (full_dir / "t.json").read_text()
    full = json.loads((full_dir / "t.summary.json").read_text())
    done = json.loads((crash_dir / "t.summary.json").read_text())
    for key in ("episodes_done", "avg_reward", "pass_hat_k", "errors"):
        assert done[key] == full[key]


async def test_resume_after_truncated_log(tmp_path):
    await run_config(make_config(tmp_path, num_trials=2))
    expected = (tmp_path / "t.json").read_text()
    log = tmp_path / "t.jsonl"
    lines = log.read_bytes().split(b"\n")
    # header + 2 episodes + half of the third (killed mid-write); derived files lost
    log.write_bytes(b"\n".join(lines[:3]) + b"\n" + lines[3][: len(lines[3]) // 2])
    (tmp_path / "t.json").unlink()
    outcome = await run_config(make_config(tmp_path, num_trials=2, resume=str(log)))
    assert outcome.ran == 4
    assert (tmp_path / "t.json").read_text() == expected
    contents = read_log(log)
    assert contents.bad_lines == 0 and len(contents.records) == 6


async def test_resume_reruns_errored_episodes(tmp_path, register):
    class Outage(State):
        down = True

        async def on_send(self, agent: Hooked) -> None:
            if self.down and agent.key[0] == 1:
                raise AdapterError("503 after retries", retryable=True)

    outage = Outage()
    register("outage", hooked_builder(outage))
    first = await run_config(make_config(tmp_path, agent_strategy="outage"))
    assert first.summary["errors"] == 1
    outage.down = False
    second = await run_config(
        make_config(tmp_path, agent_strategy="outage", resume=str(tmp_path / "t.json"))
    )
    assert second.ran == 1
    assert second.summary["errors"] == 0 and second.summary["episodes_scored"] == 3
    assert len(results_json(tmp_path / "t.json")) == 3


async def test_resume_refuses_a_different_configuration(tmp_path):
    await run_config(make_config(tmp_path, agent_options={"api_key": "s3cret-value"}))
    log = tmp_path / "t.jsonl"
    assert "s3cret-value" not in log.read_text()  # secrets are hashed in the header
    with pytest.raises(RunConfigError, match="max_steps: 30 -> 5"):
        prepare_run(make_config(tmp_path, max_steps=5, resume=str(log)))
    with pytest.raises(RunConfigError, match="agent option api_key"):
        prepare_run(make_config(tmp_path, agent_options={"api_key": "other"}, resume=str(log)))
    with pytest.raises(RunConfigError, match="selected tasks differ"):
        prepare_run(
            make_config(
                tmp_path,
                task_ids=[13, 0],
                agent_options={"api_key": "s3cret-value"},
                resume=str(log),
            )
        )
    with pytest.raises(RunConfigError, match="cannot resume"):
        prepare_run(make_config(tmp_path, resume=str(tmp_path / "missing.jsonl")))
    # same settings (concurrency is not one that changes results): accepted, nothing to do
    plan = prepare_run(
        make_config(
            tmp_path, max_concurrency=7, agent_options={"api_key": "s3cret-value"}, resume=str(log)
        )
    )
    assert plan.pending == []


async def test_cancel_writes_what_is_done(tmp_path):
    class CancelAfter:
        def __init__(self, n: int) -> None:
            self.n = n
            self.task: asyncio.Task[Any] | None = None
            self.seen = 0

        def started(self, total: int, done: list[Any]) -> None:
            self.total = total

        def episode_done(self, record: Any) -> None:
            self.seen += 1
            if self.seen == self.n and self.task is not None:
                self.task.cancel()  # what Ctrl-C does to asyncio.run's main task

        def finished(self) -> None:
            pass

    observer = CancelAfter(2)
    runner = Runner(prepare_run(make_config(tmp_path, num_trials=2)), observer)
    observer.task = asyncio.ensure_future(runner.run())
    with pytest.raises(asyncio.CancelledError):
        await observer.task
    assert observer.total == 6
    assert runner.outcome is not None and runner.outcome.interrupted
    summary = json.loads((tmp_path / "t.summary.json").read_text())
    assert summary["episodes_done"] == 2 and summary["interrupted"]
    assert len(results_json(tmp_path / "t.json")) == 2
    assert len(read_log(tmp_path / "t.jsonl").records) == 2


async def test_shuffle_changes_execution_not_the_results_order(tmp_path):
    ids = list(range(10))
    outcome = await run_config(make_config(tmp_path, task_ids=ids, shuffle=1))
    lines = (tmp_path / "t.jsonl").read_text().splitlines()[1:]
    executed = [json.loads(line)["task_id"] for line in lines]
    assert sorted(executed) == ids and executed != ids
    assert [r.task_id for r in outcome.records] == ids


# -- per-episode seeds, user-model rotation, several domains, mt-bench --------------------


def test_episode_seed_is_stable_and_differs_per_trial():
    # Pinned: sha256-based, so it must not change between processes or versions.
    assert episode_seed(10, 13, 0) == 1644861110
    assert episode_seed(10, 13, 1) == 108944844
    assert episode_seed(10, "retail/5", 0) == 1055158961
    seeds = {episode_seed(10, t, k) for t in range(20) for k in range(5)}
    assert len(seeds) == 100 and all(0 <= s < 2**31 for s in seeds)


def quick_customer(request: Request) -> Reply:
    """Greets (naming the model it runs on), then stops at the agent's first answer."""
    if request.last_text == GREETING:
        return Reply(text=f"Hi, this is {request.model}.")
    return Reply(text="###STOP###")


async def test_seeds_and_sampling_reach_the_agent_and_the_user_per_episode(
    tmp_path,
    fake_llm: FakeLLM,  # noqa: F811
):
    def brain(request: Request) -> Reply:
        if request.tools:  # the tool-calling agent
            return Reply(text="All done.")
        return quick_customer(request)

    fake_llm.brain = brain
    outcome = await run_config(
        make_config(
            tmp_path,
            agent_strategy="tool-calling",
            model="openai/agent-m",
            top_p=0.5,
            user_strategy="llm",
            user_model="openai/user-m",
            user_top_p=0.25,
            task_ids=[13, 0],
            num_trials=2,
            seed=10,
        )
    )
    assert outcome.summary["errors"] == 0
    # One episode at a time: user greeting, agent answer, user stop.
    requests = fake_llm.requests
    assert len(requests) == 3 * 4
    for i, (task_id, trial) in enumerate(outcome.plan.order):
        user_start, agent, user_stop = requests[3 * i : 3 * i + 3]
        expected = episode_seed(10, task_id, trial)
        assert [r.body["seed"] for r in (user_start, agent, user_stop)] == [expected] * 3
        assert agent.model == "agent-m" and agent.body["top_p"] == 0.5
        assert user_start.model == "user-m" and user_start.body["top_p"] == 0.25
    records = {r.key: r for r in outcome.records}
    assert records[(13, 0)].seed == episode_seed(10, 13, 0) != records[(13, 1)].seed


async def test_user_models_rotate_round_robin_over_the_sample_index(tmp_path, fake_llm: FakeLLM):  # noqa: F811
    fake_llm.brain = quick_customer
    models = ["openai/u0", "openai/u1"]
    config = make_config(tmp_path, user_strategy="llm", user_models=models, num_trials=2)
    plan = prepare_run(config)
    # sample index = trial * number of tasks + position of the task in the selection
    assert [plan.sample_index(k) for k in plan.order] == [0, 1, 2, 3, 4, 5]
    outcome = await Runner(plan).run()
    got = {r.key: r.user_model for r in outcome.records}
    assert got == {
        (13, 0): "openai/u0",
        (0, 0): "openai/u1",
        (1, 0): "openai/u0",
        (13, 1): "openai/u1",
        (0, 1): "openai/u0",
        (1, 1): "openai/u1",
    }
    # ... and each episode's user really ran on its model
    for record in outcome.records:
        assert record.messages[1]["content"] == f"Hi, this is {record.user_model.split('/')[1]}."
    by_model = outcome.summary["by_user_model"]
    assert set(by_model) == set(models)
    assert by_model["openai/u0"]["episodes"] == 3 and by_model["openai/u0"]["avg_reward"] == 1.0
    assert outcome.plan.run_name == "t"
    header = read_log(tmp_path / "t.jsonl").header
    assert (
        header["config"]["user_models"] == models and header["config"]["user_model"] == "openai/u0"
    )


def test_the_sample_index_ignores_shuffle_and_survives_more_trials(tmp_path):
    a = prepare_run(make_config(tmp_path, num_trials=2, shuffle=1, task_ids=list(range(8))))
    b = prepare_run(make_config(tmp_path, num_trials=3, task_ids=list(range(8))))
    assert a.order != b.order[: len(a.order)]
    assert all(a.sample_index(k) == b.sample_index(k) for k in a.order)
    assert sorted(a.sample_index(k) for k in a.order) == list(range(16))


async def test_several_domains_namespace_task_ids_and_use_their_own_env(tmp_path, register):
    sessions: list[tuple[str, Any]] = []

    class DomainOracle(OracleAgent):
        async def start(self, session: SessionContext) -> None:
            sessions.append((session.domain, session.task_id))
            await super().start(session)

    register("domain-oracle", lambda options: SimpleProvider(DomainOracle))
    config = make_config(
        tmp_path, env="airline,retail", agent_strategy="domain-oracle", task_ids=[13, "retail/5"]
    )
    assert config.envs == ["airline", "retail"]
    outcome = await run_config(config)
    assert list(outcome.plan.tasks) == ["airline/13", "retail/13", "retail/5"]
    assert outcome.summary["avg_reward"] == 1.0 and outcome.summary["errors"] == 0
    assert sorted(sessions) == [("airline", 13), ("retail", 5), ("retail", 13)]
    results = results_json(tmp_path / "t.json")
    assert [e["task_id"] for e in results] == ["airline/13", "retail/13", "retail/5"]
    retail = json.loads((DATA_DIR / "retail" / "tasks" / "test.json").read_text())
    assert results[2]["info"]["task"] == retail[5]
    assert {r.domain for r in outcome.records} == {"airline", "retail"}
    assert set(outcome.summary["by_domain"]) == {"airline", "retail"}
    # single-domain runs keep integer ids (and no by_domain)
    single = await run_config(make_config(tmp_path, run_name="s", task_ids=[13]))
    assert results_json(tmp_path / "s.json")[0]["task_id"] == 13
    assert "by_domain" not in single.summary


def test_several_domains_selection_errors(tmp_path):
    with pytest.raises(RunConfigError, match="'hotel/3' is not in this run's env"):
        prepare_run(make_config(tmp_path, env="airline,retail", task_ids=["hotel/3"]))
    with pytest.raises(RunConfigError, match="task id 60 out of range for airline test"):
        prepare_run(make_config(tmp_path, env="airline,retail", task_ids=[60]))
    with pytest.raises(RunConfigError, match="--tasks-file takes a single --env"):
        prepare_run(make_config(tmp_path, env="airline,retail", tasks_file="x.json"))
    # a namespaced id of the one domain of a single-domain run is its plain id
    plan = prepare_run(make_config(tmp_path, task_ids=["airline/13"]))
    assert list(plan.tasks) == [13]


def test_mt_bench_files_come_from_tau_export_not_from_the_run(tmp_path):
    with pytest.raises(ValueError, match="tau export --format mt-bench"):
        make_config(tmp_path, output_format="mt-bench")


def test_max_turns_is_not_a_second_name_of_max_steps(tmp_path):
    with pytest.raises(ValueError, match="max_turns"):
        make_config(tmp_path, max_turns=7)


async def test_a_missing_api_key_is_an_auth_error_without_retries(
    tmp_path,
    fake_llm: FakeLLM,  # noqa: F811
    monkeypatch,
):
    monkeypatch.delenv("OPENAI_API_KEY")
    outcome = await run_config(
        make_config(
            tmp_path,
            user_strategy="llm",
            user_model="openai/u",
            task_ids=[13],
            skip_preflight=True,  # the episode's own error (pre-flight: test_failfast.py)
        )
    )
    record = outcome.records[0]
    assert record.error is not None
    assert (record.error["kind"], record.error["retryable"]) == ("auth_error", False)
    assert "after" not in record.error["message"]  # no "after 5 attempts"
    assert fake_llm.requests == []


async def test_a_plain_resume_keeps_the_trials_an_earlier_resume_added(tmp_path):
    first = await run_config(make_config(tmp_path, task_ids=[13, 0]))
    log = str(first.plan.log_path)
    more = await run_config(make_config(tmp_path, task_ids=[13, 0], resume=log, num_trials=3))
    assert more.ran == 4
    again = await run_config(make_config(tmp_path, task_ids=[13, 0], resume=log))
    assert again.ran == 0 and again.plan.config.num_trials == 3
    trials = sorted((e["task_id"], e["trial"]) for e in results_json(first.plan.results_path))
    assert trials == [(0, 0), (0, 1), (0, 2), (13, 0), (13, 1), (13, 2)]
