"""A cluster's workers get their node's environment, not the driver's: an
`OPENAI_BASE_URL` (or proxy) exported in the driver's shell only sends the workers' model
calls elsewhere than the driver's pre-flight went. The run says so, once per model and
endpoint, before its first episode, and runs: a node may name its own endpoint on
purpose (a model server per node). The same for the OpenAI account it bills."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
import ray

from tau_bench.benchmarks.runner.replies import respond as scripted_model
from tau_bench.config import RunConfig
from tau_bench.fakes.openai_server import OpenAIServer
from tau_bench.runner import Runner, prepare_run
from tests.conftest import DATA_DIR
from tests.tau_bench.llm.local_http import LocalHTTPServer, QuietHandler

DEADLINE = 120.0  # seconds the run may take (two workers start on a loaded machine)
BACKEND_LOG = "tau_bench.runner.backends.ray"
ACCOUNT_ENV = ("OPENAI_ORGANIZATION", "OPENAI_ORG_ID", "OPENAI_PROJECT", "OPENAI_PROJECT_ID")
MORE_ENV = (*ACCOUNT_ENV, "ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL")


def config(tmp_path: Path, **fields: Any) -> RunConfig:
    base: dict[str, Any] = dict(
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
    return RunConfig(**{**base, **fields})


class AnthropicModel(LocalHTTPServer):
    """A model speaking Anthropic's messages API on 127.0.0.1 that says goodbye to
    everything; `calls` counts the requests it answered."""

    def __init__(self) -> None:
        owner = self
        self.calls = 0

        class Messages(QuietHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                owner.calls += 1
                body = json.dumps({**GOODBYE, "id": f"msg_{owner.calls}"}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        super().__init__(Messages)


GOODBYE = {
    "type": "message",
    "role": "assistant",
    "model": "claude-3-5-haiku-latest",
    "content": [{"type": "text", "text": "Thank you, goodbye."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 4},
}


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
    for name in ("OPENAI_API_BASE", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", *MORE_ENV):
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


async def run_with(
    tmp_path: Path,
    start_ray,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    workers_env: dict[str, str],
    driver_env: dict[str, str],
    **fields: Any,
) -> list[str]:
    """Run two episodes (`config` with `fields`) on a Ray whose workers get `workers_env`
    while the driver has `driver_env`; the endpoint warnings the run gave. Every episode
    must succeed."""
    caplog.set_level(logging.WARNING, logger=BACKEND_LOG)
    start_ray(workers_env)
    for name, value in driver_env.items():  # exported in the driver's shell only
        monkeypatch.setenv(name, value)
    run = Runner(prepare_run(config(tmp_path, **fields))).run()
    outcome = await asyncio.wait_for(run, DEADLINE)
    assert len(outcome.records) == 2 and not any(r.is_error for r in outcome.records)
    return endpoint_warnings(caplog)


async def test_workers_sending_a_model_s_calls_elsewhere_are_named_and_the_run_goes_on(
    tmp_path: Path,
    ray_with_workers_env,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with OpenAIServer(scripted_model) as nodes, OpenAIServer(scripted_model) as drivers:
        warnings = await run_with(
            tmp_path,
            ray_with_workers_env,
            monkeypatch,
            caplog,
            {"OPENAI_BASE_URL": nodes.base_url},
            {"OPENAI_BASE_URL": drivers.base_url},
        )
        to_driver, to_nodes = drivers.stats()["requests"], nodes.stats()["requests"]
    assert to_driver == 2  # the pre-flight's agent and user checks
    assert to_nodes > 2  # the episodes
    assert len(warnings) == 2, warnings  # once per model, not once per worker
    agent, user = sorted(warnings)
    assert agent.startswith(
        "agent tool-calling model openai/gpt-4o-mini: the workers on the node at "
    ), agent
    assert user.startswith("user model openai/gpt-4o-mini ("), user
    for line in warnings:
        assert f" send its calls to {nodes.base_url}, this driver to {drivers.base_url} " in line
        assert "--api-base and --user-api-base travel with the run; docs/scale.md" in line


@pytest.mark.parametrize(
    ("workers_account", "driver_account", "said"),
    [
        ({}, {}, None),
        (
            {"OPENAI_ORG_ID": "org-node"},
            {"OPENAI_ORG_ID": "org-driver"},
            "{url} (organization org-node), this driver to {url} (organization org-driver) ",
        ),
    ],
    ids=["same-settings", "another-account"],
)
async def test_workers_calling_as_the_driver_does_are_not_mentioned_another_account_is(
    tmp_path: Path,
    ray_with_workers_env,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    workers_account: dict[str, str],
    driver_account: dict[str, str],
    said: str | None,
) -> None:
    with OpenAIServer(scripted_model) as server:
        url = {"OPENAI_BASE_URL": server.base_url}
        warnings = await run_with(
            tmp_path,
            ray_with_workers_env,
            monkeypatch,
            caplog,
            {**url, **workers_account},
            {**url, **driver_account},
        )
    if said is None:
        assert warnings == []
        return
    assert len(warnings) == 2, warnings
    for line in warnings:
        assert f" send its calls to {said.format(url=server.base_url)}" in line


async def test_another_provider_s_endpoint_setting_on_the_nodes_is_named(
    tmp_path: Path,
    ray_with_workers_env,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = "anthropic/claude-3-5-haiku-latest"
    key = {"ANTHROPIC_API_KEY": "sk-ant-test-endpoints"}
    with AnthropicModel() as nodes, AnthropicModel() as drivers:
        warnings = await run_with(
            tmp_path,
            ray_with_workers_env,
            monkeypatch,
            caplog,
            {**key, "ANTHROPIC_API_BASE": nodes.url},
            {**key, "ANTHROPIC_API_BASE": drivers.url},
            model=model,
            user_strategy="scripted",
        )
        to_driver, to_nodes = drivers.calls, nodes.calls
    assert to_driver == 1 and to_nodes >= 2  # the pre-flight's check; the episodes
    assert warnings == [
        f"agent tool-calling model {model}: the workers on the node at "
        f"{ray.util.get_node_ip_address()} send its calls to litellm's "
        f"anthropic endpoint (ANTHROPIC_API_BASE={nodes.url}), this driver to "
        f"litellm's anthropic endpoint (ANTHROPIC_API_BASE={drivers.url}) (a "
        "cluster's workers get their node's environment, not the driver's: "
        "OPENAI_BASE_URL or another provider's endpoint setting, a proxy, OPENAI_ORG_ID; "
        "--api-base and --user-api-base travel with the run; docs/scale.md)"
    ]
