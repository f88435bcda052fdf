"""A cluster's workers get their node's environment, not the driver's: an
`OPENAI_BASE_URL` (or proxy) exported in the driver's shell only sends the workers' model
calls elsewhere than the driver's pre-flight went. The run says so, once per model and
endpoint, before its first episode, and runs: a node may name its own endpoint on
purpose (a model server per node). The same for the OpenAI account it bills."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
import ray

from tau_bench.benchmarks.runner.replies import respond as scripted_model
from tau_bench.config import RunConfig
from tau_bench.fakes.openai_server import OpenAIServer
from tau_bench.runner import Runner, prepare_run
from tests.conftest import DATA_DIR

DEADLINE = 120.0  # seconds the run may take (two workers start on a loaded machine)
BACKEND_LOG = "tau_bench.runner.backends.ray"
ACCOUNT_ENV = ("OPENAI_ORGANIZATION", "OPENAI_ORG_ID", "OPENAI_PROJECT", "OPENAI_PROJECT_ID")


def config(tmp_path: Path) -> RunConfig:
    return RunConfig(
        env="airline",
        agent_strategy="tool-calling",
        model="openai/gpt-4o-mini",
        user_strategy="llm",
        user_model="openai/gpt-4o-mini",
        task_ids=[0, 1],
        max_concurrency=2,
        workers=2,
        data_dir=str(DATA_DIR),
        log_dir=str(tmp_path / "results"),
        quiet=True,
    )


def endpoint_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == BACKEND_LOG
        and r.levelno == logging.WARNING
        and " send its calls " in r.getMessage()
    ]


@pytest.fixture
def ray_with_workers_env(monkeypatch: pytest.MonkeyPatch):
    """`start(env)`: a local Ray whose workers get `env` on top of the driver's, as a
    node's workers get its `ray start`'s."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-endpoints")
    for name in ("OPENAI_API_BASE", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", *ACCOUNT_ENV):
        monkeypatch.delenv(name, raising=False)

    def start(env: dict[str, str]) -> None:
        ray.init(
            address="local",
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": env},
        )

    try:
        yield start
    finally:
        ray.shutdown()


async def test_workers_sending_a_model_s_calls_elsewhere_are_named_and_the_run_goes_on(
    tmp_path: Path,
    ray_with_workers_env,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=BACKEND_LOG)
    with OpenAIServer(scripted_model) as nodes, OpenAIServer(scripted_model) as drivers:
        ray_with_workers_env({"OPENAI_BASE_URL": nodes.base_url})
        monkeypatch.setenv("OPENAI_BASE_URL", drivers.base_url)  # the driver's shell only
        outcome = await asyncio.wait_for(Runner(prepare_run(config(tmp_path))).run(), DEADLINE)
        to_driver, to_nodes = drivers.stats()["requests"], nodes.stats()["requests"]
    assert len(outcome.records) == 2 and not any(r.is_error for r in outcome.records)
    assert to_driver == 2  # the pre-flight's agent and user checks
    assert to_nodes > 2  # the episodes
    warnings = endpoint_warnings(caplog)
    assert len(warnings) == 2, warnings  # once per model, not once per worker
    agent, user = sorted(warnings)
    assert agent.startswith(
        "agent tool-calling model openai/gpt-4o-mini: the workers on the node at "
    ), agent
    assert user.startswith("user model openai/gpt-4o-mini ("), user
    for line in warnings:
        assert f" send its calls to {nodes.base_url}, this driver to {drivers.base_url} " in line
        assert "--api-base and --user-api-base travel with the run; docs/scale.md" in line


async def test_workers_calling_where_the_driver_does_are_not_mentioned(
    tmp_path: Path,
    ray_with_workers_env,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=BACKEND_LOG)
    with OpenAIServer(scripted_model) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        ray_with_workers_env({"OPENAI_BASE_URL": server.base_url})
        outcome = await asyncio.wait_for(Runner(prepare_run(config(tmp_path))).run(), DEADLINE)
    assert len(outcome.records) == 2 and not any(r.is_error for r in outcome.records)
    assert endpoint_warnings(caplog) == []


async def test_workers_billing_another_account_are_named(
    tmp_path: Path,
    ray_with_workers_env,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=BACKEND_LOG)
    with OpenAIServer(scripted_model) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        ray_with_workers_env({"OPENAI_BASE_URL": server.base_url, "OPENAI_ORG_ID": "org-node"})
        monkeypatch.setenv("OPENAI_ORG_ID", "org-driver")
        outcome = await asyncio.wait_for(Runner(prepare_run(config(tmp_path))).run(), DEADLINE)
    assert len(outcome.records) == 2 and not any(r.is_error for r in outcome.records)
    warnings = endpoint_warnings(caplog)
    assert len(warnings) == 2, warnings
    for line in warnings:
        assert (
            f" send its calls to {server.base_url} (organization org-node), this driver to "
            f"{server.base_url} (organization org-driver) "
        ) in line
