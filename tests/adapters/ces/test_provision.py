"""Provisioning against the emulator (an empty project): plan, create, idempotency, update,
and an episode through the provisioned app."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from adapters.ces.adapter import load_options
from adapters.ces.clients import make_clients
from adapters.ces.harness.emulator import Emulator
from adapters.ces.harness.provision import Provisioner, Report
from tau_bench.domains import load_domain

from ...conftest import DATA_DIR
from .conftest import APP, provider_for
from .test_episodes import episode


@pytest.fixture
async def empty() -> AsyncIterator[Emulator]:
    emu = Emulator(env="retail", data_dir=DATA_DIR, auto_apps=False, max_page_size=5)
    await emu.start()
    yield emu
    await emu.stop()


async def provision(emu: Emulator, env: str, *, dry_run: bool = False, schemas=None) -> Report:
    options = load_options({"app_id": APP, "emulator": emu.address})
    domain = load_domain(env, DATA_DIR)
    clients = await make_clients(options)
    try:
        return await Provisioner(clients, options).run(
            env, schemas or domain.tool_schemas, domain.policy, dry_run=dry_run
        )
    finally:
        await clients.close()


async def test_dry_run_plans_everything_and_writes_nothing(empty: Emulator) -> None:
    report = await provision(empty, "airline", dry_run=True)
    actions = [s.action for s in report.steps]
    n_tools = len(load_domain("airline", DATA_DIR).tool_schemas)
    assert actions == ["create_app"] + ["create_tool"] * n_tools + ["create_agent", "update_app"]
    assert report.steps[1].request["tool"]["client_function"]["parameters"]["type_"] == "OBJECT"
    assert not empty.store.apps
    assert not any(m.startswith("Create") or m.startswith("Update") for m in empty.calls)


async def test_provisioning_is_idempotent(empty: Emulator) -> None:
    first = await provision(empty, "retail")
    n_tools = len(load_domain("retail", DATA_DIR).tool_schemas)
    assert len(first.steps) == 1 + n_tools + 2 and not first.unchanged
    record = empty.store.apps[APP]
    agent = record.agents[record.app.root_agent]
    assert agent.instruction == load_domain("retail", DATA_DIR).policy.strip()
    assert sorted(agent.tools) == sorted(record.tools)
    calls_before = dict(empty.calls)
    second = await provision(empty, "retail")
    assert second.steps == [] and len(second.unchanged) == n_tools + 2
    writes = {m for m in empty.calls if m.startswith(("Create", "Update", "Delete"))}
    assert all(empty.calls[m] == calls_before.get(m, 0) for m in writes)
    # Paging was exercised (5 per page).
    assert empty.calls["ListTools"] - calls_before.get("ListTools", 0) >= n_tools // 5


async def test_a_changed_tool_is_updated_alone(empty: Emulator) -> None:
    await provision(empty, "retail")
    schemas = [dict(s) for s in load_domain("retail", DATA_DIR).tool_schemas]
    fn = dict(schemas[0]["function"])
    fn["description"] = "A different description."
    schemas[0] = {**schemas[0], "function": fn}
    report = await provision(empty, "retail", schemas=schemas)
    assert [(s.action, s.target, s.fields) for s in report.steps] == [
        ("update_tool", fn["name"], ["client_function"])
    ]
    stored = empty.store.apps[APP].tool_for_function(fn["name"])
    assert stored is not None and stored.client_function.description == "A different description."


async def test_an_episode_runs_on_the_provisioned_app(empty: Emulator) -> None:
    await provision(empty, "airline")
    provider = provider_for(empty.address)
    try:
        result = await episode("airline", 2, provider)
    finally:
        await provider.aclose()
    assert result.result.error is None and result.reward_value == 1.0
    # Tool resources end in opaque ids: names came from ListTools.
    assert all(
        not name.endswith(tool.client_function.name)
        for name, tool in empty.store.apps[APP].tools.items()
    )
