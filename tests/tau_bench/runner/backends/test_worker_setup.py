"""A worker that cannot build the run (the data directory its node is told of is not
there, as on a cluster node without the data; a model's API key the driver has and the
node lacks) stops the run with one line naming the cause and the node, instead of Ray's
remote traceback or an auth error per episode; the run's files say it was interrupted
and `--resume` runs every episode."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import ray

from tau_bench.benchmarks.runner.replies import respond as scripted_model
from tau_bench.config import RunConfig, RunConfigError
from tau_bench.fakes.openai_server import OpenAIServer
from tau_bench.runner import Runner, prepare_run
from tau_bench.runner.backends.ray import WorkerFailure
from tau_bench.runner.backends.ray_actors import WorkerSetupError
from tests.conftest import DATA_DIR

DEADLINE = 120.0  # seconds the run may take (two workers start on a loaded machine)


@pytest.fixture
def ray_whose_workers_lack_the_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TAU_BENCH_DATA", str(DATA_DIR))  # the driver has the data
    missing = tmp_path / "not-on-this-node"
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"TAU_BENCH_DATA": str(missing)}},
    )
    try:
        yield missing
    finally:
        ray.shutdown()


async def test_a_worker_that_cannot_start_stops_the_run_in_one_line(
    tmp_path: Path, ray_whose_workers_lack_the_data: Path
) -> None:
    config = RunConfig(
        env="airline",
        agent_strategy="oracle",
        user_strategy="scripted",
        task_ids=[0, 1, 2],
        max_concurrency=3,
        workers=2,
        log_dir=str(tmp_path / "results"),
        quiet=True,
    )
    runner = Runner(prepare_run(config))
    with pytest.raises(RunConfigError) as caught:
        await asyncio.wait_for(runner.run(), DEADLINE)
    message = str(caught.value)
    assert message.startswith("--backend ray: a worker could not start the run: DataDirError: ")
    assert str(ray_whose_workers_lack_the_data) in message
    assert "(on the node at " in message
    assert "\n" not in message and "Traceback" not in message
    summary = json.loads(next((tmp_path / "results").glob("*.summary.json")).read_text())
    assert summary["interrupted"] is True
    assert (summary["episodes_planned"], summary["episodes_done"]) == (3, 0)


MODEL_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE")


@pytest.fixture
def ray_whose_workers_lack_the_key(monkeypatch: pytest.MonkeyPatch):
    """A local Ray started with no OpenAI key or endpoint in its environment: its workers
    inherit that environment, as a cluster node's workers inherit its `ray start`'s."""
    for name in MODEL_ENV:
        monkeypatch.delenv(name, raising=False)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


async def test_a_key_only_the_driver_has_stops_the_run_at_the_start_in_one_line(
    tmp_path: Path, ray_whose_workers_lack_the_key: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = RunConfig(
        env="airline",
        agent_strategy="tool-calling",
        model="openai/gpt-4o-mini",
        user_strategy="llm",
        user_model="openai/gpt-4o-mini",
        task_ids=[0, 1, 2],
        max_concurrency=3,
        workers=2,
        data_dir=str(DATA_DIR),
        log_dir=str(tmp_path / "results"),
        quiet=True,
    )
    with OpenAIServer(scripted_model) as server:
        # Exported in the driver's shell after the cluster started: its pre-flight passes.
        monkeypatch.setenv("OPENAI_API_KEY", "sk-driver-only-4321")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        runner = Runner(prepare_run(config))
        with pytest.raises(RunConfigError) as caught:
            await asyncio.wait_for(runner.run(), DEADLINE)
        preflight_calls = server.stats()["requests"]
    message = str(caught.value)
    assert message.startswith(
        "--backend ray: a worker could not start the run: agent tool-calling model "
        "openai/gpt-4o-mini: no API key: set OPENAI_API_KEY in this Ray node's environment"
    ), message
    assert "(on the node at " in message and "docs/scale.md" in message
    assert "\n" not in message and "sk-driver-only" not in message
    assert preflight_calls == 2  # the driver's agent and user checks; no episode's call
    summary = json.loads(next((tmp_path / "results").glob("*.summary.json")).read_text())
    assert summary["interrupted"] is True
    assert (summary["episodes_planned"], summary["episodes_done"]) == (3, 0)


def test_a_failure_that_is_not_the_setup_is_named_by_its_type() -> None:
    class Boom(Exception):
        pass

    class TaskError(Exception):  # what Ray raises: the worker's exception as `cause`
        cause = Boom("first line\nsecond line")

    assert str(WorkerFailure.from_task_error(TaskError())) == ("a worker failed: Boom: first line")
    TaskError.cause = WorkerSetupError("DataDirError: gone (on the node at 10.0.0.2)")  # type: ignore[assignment]
    assert str(WorkerFailure.from_task_error(TaskError())) == (
        "a worker could not start the run: DataDirError: gone (on the node at 10.0.0.2)"
    )
