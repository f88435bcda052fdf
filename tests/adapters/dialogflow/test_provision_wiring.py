"""`--playbook-name` wiring: the named playbook is reached by sessions, idempotently."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from google.cloud import dialogflowcx_v3beta1 as cx

from adapters.dialogflow.clients import Clients, make_clients
from adapters.dialogflow.config import load_config
from adapters.dialogflow.harness.emulator import Emulator
from adapters.dialogflow.harness.emulator.store import START_PLAYBOOK_ID
from adapters.dialogflow.provision import Provisioner, Report
from tau_bench.domains import load_domain

from ...conftest import DATA_DIR

AGENT = "projects/proj/locations/global/agents/agent-1"
DEFAULT = f"{AGENT}/playbooks/{START_PLAYBOOK_ID}"
TAU = Path(sys.executable).with_name("tau")


@pytest.fixture
async def bare() -> AsyncIterator[Emulator]:
    emu = Emulator(env="retail", preload_tools=False)
    await emu.start()
    yield emu
    await emu.stop()


@pytest.fixture
async def clients(bare: Emulator) -> AsyncIterator[Clients]:
    made = await make_clients(load_config({"agent_id": AGENT, "emulator": bare.address}))
    yield made
    await made.close()


async def provision(
    clients: Clients, bare: Emulator, wire: str = "reference", dry_run: bool = False
) -> Report:
    domain = load_domain("retail", DATA_DIR)
    provisioner = Provisioner(clients, load_config({"agent_id": AGENT, "emulator": bare.address}))
    return await provisioner.run(
        "retail",
        domain.tool_schemas,
        domain.policy,
        playbook_name="tau retail",
        wire=wire,
        dry_run=dry_run,
    )


async def playbooks_run(clients: Clients) -> list[str]:
    """The playbooks the emulator reports for a fresh session's first turn."""
    response = await clients.sessions.detect_intent(
        request=cx.DetectIntentRequest(
            session=f"{AGENT}/sessions/wiring-check",
            query_input=cx.QueryInput(text=cx.TextInput(text="hello"), language_code="en"),
            query_params=cx.QueryParameters(parameters={"env": "retail", "task_id": 5}),
        )
    )
    return list(response.query_result.generative_info.current_playbooks)


def tau_playbook(bare: Emulator) -> str:
    agent = bare.store.agents[AGENT]
    return next(n for n, p in agent.playbooks.items() if p.display_name == "tau retail")


async def test_reference_is_the_default_and_is_idempotent(bare: Emulator, clients: Clients) -> None:
    assert await playbooks_run(clients) == [DEFAULT]
    first = await provision(clients, bare)
    actions = [(s.action, s.target) for s in first.steps[-2:]]
    assert actions == [
        ("create_playbook", "tau retail"),
        ("update_playbook", "Default Generative Agent"),
    ]
    assert first.steps[-1].fields == ["instruction"]
    assert "referenced from the start playbook 'Default Generative Agent'" in first.wiring

    start = bare.store.agents[AGENT].playbooks[DEFAULT]
    assert list(start.referenced_playbooks) == [tau_playbook(bare)]
    assert "${PLAYBOOK: tau retail}" in start.instruction.steps[-1].text
    assert await playbooks_run(clients) == [DEFAULT, tau_playbook(bare)]

    writes = bare.calls["UpdatePlaybook"] + bare.calls["CreatePlaybook"]
    second = await provision(clients, bare)
    assert second.steps == [] and "reference to tau retail" in second.unchanged[-1]
    assert bare.calls["UpdatePlaybook"] + bare.calls["CreatePlaybook"] == writes
    assert len(bare.store.agents[AGENT].playbooks[DEFAULT].instruction.steps) == 1


async def test_start_wiring_makes_sessions_run_the_playbook(
    bare: Emulator, clients: Clients
) -> None:
    planned = await provision(clients, bare, wire="start", dry_run=True)
    update = planned.steps[-1].to_dict()
    assert update["action"] == "update_agent"
    assert update["request"]["agent"]["start_playbook"] == "<new playbook tau retail>"
    assert planned.wiring == "playbook 'tau retail' would be the agent's start playbook"
    assert bare.calls["UpdateAgent"] == 0 and await playbooks_run(clients) == [DEFAULT]

    first = await provision(clients, bare, wire="start")
    assert first.steps[-1].action == "update_agent"
    agent = await clients.agents.get_agent(request=cx.GetAgentRequest(name=AGENT))
    assert agent.start_playbook == tau_playbook(bare)
    assert await playbooks_run(clients) == [tau_playbook(bare)]

    second = await provision(clients, bare, wire="start")
    assert second.steps == [] and second.wiring.endswith("is the agent's start playbook")
    assert bare.calls["UpdateAgent"] == 1
    # The default playbook was left alone: no hand-over step was added to it.
    assert not bare.store.agents[AGENT].playbooks[DEFAULT].instruction.steps


async def test_the_emulator_refuses_what_the_service_refuses(clients: Clients) -> None:
    from google.api_core import exceptions

    missing = cx.Agent(name=AGENT, start_playbook=f"{AGENT}/playbooks/nope")
    with pytest.raises(exceptions.NotFound):
        await clients.agents.update_agent(
            request=cx.UpdateAgentRequest(agent=missing, update_mask={"paths": ["start_playbook"]})
        )
    with pytest.raises(exceptions.InvalidArgument):
        await clients.agents.update_agent(
            request=cx.UpdateAgentRequest(
                agent=cx.Agent(name=AGENT), update_mask={"paths": ["locked"]}
            )
        )
    with pytest.raises(exceptions.FailedPrecondition):
        await clients.playbooks.delete_playbook(request=cx.DeletePlaybookRequest(name=DEFAULT))


def tau(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR)}
    return subprocess.run(
        [str(TAU), "dialogflow", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_cli_prints_the_wiring_and_refuses_bad_flags(threaded_emulator: Emulator) -> None:
    base = ["provision", "--env", "airline", "--agent-id", "agent-1", "--project-id", "proj"]
    base += ["--emulator", threaded_emulator.address, "--playbook-name", "tau airline"]
    dry = tau(*base, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert "would be referenced from the start playbook" in plan["wiring"]
    assert "would be referenced" in dry.stderr and "would change 16" in dry.stderr

    applied = tau(*base, "--wire", "reference")
    assert applied.returncode == 0 and "changed 16" in applied.stderr
    again = tau(*base)
    assert "is referenced from the start playbook" in again.stderr
    assert "changed 0, unchanged 16" in again.stderr

    for bad, message in (
        (["--wire", "sideways"], "--wire must be one of reference, start"),
        (["--wire", "start", "--playbook-name", ""], "--wire needs --playbook-name"),
    ):
        out = tau(*base, *bad)
        assert out.returncode == 2 and message in out.stderr, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
