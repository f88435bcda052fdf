"""A worker that cannot build the run (here: the data directory its node is told of is
not there, as on a cluster node without the data) stops the run with one line naming
the cause and the node, instead of Ray's remote traceback; the run's files say it was
interrupted and `--resume` runs every episode."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import ray

from tau_bench.config import RunConfig, RunConfigError
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
