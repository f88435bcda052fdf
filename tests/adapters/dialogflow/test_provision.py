"""Provisioning against the emulator: creates, then changes nothing; dry runs write nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from google.cloud import dialogflowcx_v3beta1 as cx

from adapters.dialogflow.clients import Clients, make_clients
from adapters.dialogflow.config import load_config
from adapters.dialogflow.harness.emulator import Emulator
from adapters.dialogflow.provision import Provisioner
from adapters.dialogflow.structs import struct_to_python
from tau_bench.domains import load_domain
from tau_bench.episode import run_task
from tau_bench.users.scripted import ScriptedUser

from ...conftest import DATA_DIR
from .conftest import provider_for

AGENT = "projects/proj/locations/global/agents/agent-1"


@pytest.fixture
async def bare() -> AsyncIterator[Emulator]:
    emu = Emulator(env="retail", preload_tools=False, max_page_size=5)
    await emu.start()
    yield emu
    await emu.stop()


@pytest.fixture
async def clients(bare: Emulator) -> AsyncIterator[Clients]:
    made = await make_clients(load_config({"agent_id": AGENT, "emulator": bare.address}))
    yield made
    await made.close()


def _provisioner(clients: Clients, bare: Emulator) -> Provisioner:
    return Provisioner(clients, load_config({"agent_id": AGENT, "emulator": bare.address}))


async def test_provision_twice_is_idempotent(bare: Emulator, clients: Clients) -> None:
    domain = load_domain("retail", DATA_DIR)
    names = [t["function"]["name"] for t in domain.tool_schemas]
    first = await _provisioner(clients, bare).run("retail", domain.tool_schemas, domain.policy)
    assert [s.action for s in first.steps] == ["create_tool"] * len(names) + ["update_playbook"]
    assert first.steps[-1].fields == ["goal", "instruction", "referenced_tools"]

    agent = bare.store.agents[AGENT]
    assert sorted(t.display_name for t in agent.tools.values()) == sorted(names)
    tool = agent.tools[agent.tool_for_function("get_order_details") or ""]
    spec = type(tool.function_spec).pb(tool.function_spec)
    assert struct_to_python(spec.input_schema) == next(
        t["function"]["parameters"]
        for t in domain.tool_schemas
        if t["function"]["name"] == "get_order_details"
    )
    assert struct_to_python(spec.output_schema) == {
        "type": "object",
        "properties": {"result": {"type": "string"}},
    }
    start = agent.playbooks[agent.start_playbook]
    assert start.instruction.guidelines == domain.policy.strip()
    tool_steps = start.instruction.steps[1].steps
    assert [s.text.split("}")[0] for s in tool_steps] == [f"${{TOOL: {n}" for n in names]
    assert sorted(start.referenced_tools) == sorted(agent.tools)

    writes = bare.calls["CreateTool"] + bare.calls["UpdateTool"] + bare.calls["UpdatePlaybook"]
    second = await _provisioner(clients, bare).run("retail", domain.tool_schemas, domain.policy)
    assert second.steps == [] and len(second.unchanged) == len(names) + 1
    assert (
        bare.calls["CreateTool"] + bare.calls["UpdateTool"] + bare.calls["UpdatePlaybook"] == writes
    )
    assert bare.calls["ListTools"] == 1 + 4  # empty, then 16 tools at 5 per page


async def test_only_what_differs_is_updated(bare: Emulator, clients: Clients) -> None:
    domain = load_domain("retail", DATA_DIR)
    await _provisioner(clients, bare).run("retail", domain.tool_schemas, domain.policy)
    agent = bare.store.agents[AGENT]
    name = agent.tool_for_function("cancel_pending_order") or ""
    await clients.tools.update_tool(
        request=cx.UpdateToolRequest(
            tool=cx.Tool(name=name, description="edited by hand"),
            update_mask={"paths": ["description"]},
        )
    )
    report = await _provisioner(clients, bare).run("retail", domain.tool_schemas, domain.policy)
    assert [(s.action, s.target, s.fields) for s in report.steps] == [
        ("update_tool", "cancel_pending_order", ["description"])
    ]
    assert report.steps[0].request["update_mask"] == "description"
    assert agent.tools[name].description != "edited by hand"


async def test_dry_run_writes_nothing(bare: Emulator, clients: Clients) -> None:
    domain = load_domain("retail", DATA_DIR)
    report = await _provisioner(clients, bare).run(
        "retail", domain.tool_schemas, domain.policy, playbook_name="tau retail", dry_run=True
    )
    # tools, the named playbook, then the start playbook's reference to it
    assert report.dry_run and len(report.steps) == len(domain.tool_schemas) + 2
    create = report.steps[0].request
    assert (
        create["parent"] == AGENT and create["tool"]["function_spec"]["output_schema"]["properties"]
    )
    playbook = report.steps[-2]
    assert playbook.action == "create_playbook" and playbook.target == "tau retail"
    assert playbook.request["playbook"]["referenced_tools"][0].startswith("<new tool ")
    assert bare.calls["CreateTool"] == bare.calls["CreatePlaybook"] == 0
    assert bare.store.agents[AGENT].tools == {}


async def test_named_playbook_is_created_then_left_alone(bare: Emulator, clients: Clients) -> None:
    domain = load_domain("retail", DATA_DIR)
    run = _provisioner(clients, bare).run
    first = await run("retail", domain.tool_schemas, domain.policy, playbook_name="tau retail")
    assert [s.action for s in first.steps[-2:]] == ["create_playbook", "update_playbook"]
    second = await run("retail", domain.tool_schemas, domain.policy, playbook_name="tau retail")
    assert second.steps == []
    names = [p.display_name for p in bare.store.agents[AGENT].playbooks.values()]
    assert sorted(names) == ["Default Generative Agent", "tau retail"]


async def test_a_provisioned_agent_runs_episodes(bare: Emulator, clients: Clients) -> None:
    domain = load_domain("retail", DATA_DIR)
    await _provisioner(clients, bare).run("retail", domain.tool_schemas, domain.policy)
    provider = provider_for(bare.address, agent_id=AGENT, project_id=None, trace="full")
    try:
        names = await provider.tool_names()
        assert sorted(names.values()) == sorted(t["function"]["name"] for t in domain.tool_schemas)
        episode = await run_task(
            domain, domain.tasks("test")[5], 5, provider.new_adapter(), ScriptedUser()
        )
    finally:
        await provider.aclose()
    assert episode.result.error is None and episode.reward_value == 1.0
    sent = episode.result.turns[2].raw[0]["request"]["query_input"]["tool_call_result"]
    assert sent["tool"] in names and names[sent["tool"]] == sent["action"]
