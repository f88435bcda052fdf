"""τ³ through the integrations, over real loopback servers with the oracle's moves:
Dialogflow provisioning of a τ³ domain, and an HTTP bot that runs its tools itself."""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
from typing import Any

from adapters.http.adapter import HttpProvider
from adapters.http.config_load import load_config
from tau_bench.agents.oracle import OracleAgent
from tau_bench.episode import run_task
from tau_bench.suites import load_domain
from tau_bench.suites.tau3 import make_judge
from tau_bench.toolserver import BackgroundServer
from tau_bench.toolserver.host import ToolServerHost
from tau_bench.users.scripted import ScriptedUser
from tests.adapters.dialogflow.conftest import ThreadedEmulator
from tests.adapters.http import bots
from tests.tau_bench.tau3.conftest import require_data
from tests.tau_bench.tau3.tau3_runs import ENV, TAU


def _texts(steps: Any) -> list[str]:
    """Every step's text, nested steps included."""
    out = []
    for step in steps:
        out.append(step.text)
        out.extend(_texts(step.steps))
    return out


def test_dialogflow_provision_of_tau3_telecom_installs_agent_tools_and_policy() -> None:
    require_data()
    domain: Any = load_domain("tau3/telecom")
    agent_tools = {t["function"]["name"] for t in domain.tool_schemas}
    user_tools = {t["function"]["name"] for t in domain.user_tool_schemas}
    assert len(agent_tools) == 13 and not agent_tools & user_tools
    with ThreadedEmulator(env="tau3/telecom", preload_tools=False) as emu:
        base = [str(TAU), "dialogflow", "provision", "--env", "tau3/telecom"]
        base += ["--agent-id", "a1", "--project-id", "p", "--emulator", emu.address]
        dry = subprocess.run([*base, "--dry-run"], capture_output=True, text=True, env=ENV)
        assert dry.returncode == 0, dry.stderr
        plan = json.loads(dry.stdout)
        created = {c["target"] for c in plan["changes"] if c["action"] == "create_tool"}
        assert created == agent_tools and len(plan["changes"]) == 14  # + the playbook
        assert emu.calls["CreateTool"] == 0  # a dry run writes nothing
        done = subprocess.run(base, capture_output=True, text=True, env=ENV)
        assert done.returncode == 0 and "changed 14, unchanged 0" in done.stderr, done.stderr
        (agent,) = emu.store.agents.values()
        assert {t.display_name for t in agent.tools.values()} == agent_tools
        (playbook,) = agent.playbooks.values()
        assert playbook.instruction.guidelines == domain.policy.strip()  # the whole policy
        steps = "\n".join(_texts(playbook.instruction.steps))
        assert all(f"${{TOOL: {name}}}" in steps for name in agent_tools)
        assert not any(f"${{TOOL: {name}}}" in steps for name in user_tools)


def test_server_side_tools_bot_on_tau3_retail_scores_as_the_local_oracle() -> None:
    """The bot runs the task's tool calls itself, over the tool server: the τ³ evaluator
    replays them from the trajectory, so they must be in it (DB and action checks)."""
    require_data()
    domain: Any = load_domain("tau3/retail").with_judge(make_judge("assume-met"))
    tasks = domain.tasks()[:3]
    book = bots.TaskBook({("tau3/retail", i): t for i, t in enumerate(tasks)})
    log = bots.Log()
    server = BackgroundServer(bots.tool_calling_bot(book, log, via="http"))
    server.start()
    config = copy.deepcopy(bots.SERVER_TOOLS_CONFIG)
    config["base_url"] = server.url
    provider = HttpProvider(load_config(config, environ={}))
    host = ToolServerHost.for_provider(provider)
    assert host is not None
    host.start()

    async def both(i: int) -> tuple[Any, Any]:
        remote = await run_task(
            domain, tasks[i], i, provider.new_adapter(), ScriptedUser(), tool_host=host
        )
        local = await run_task(domain, tasks[i], i, OracleAgent(), ScriptedUser())
        return remote, local

    try:
        pairs = [asyncio.run(both(i)) for i in range(len(tasks))]
    finally:
        asyncio.run(provider.aclose())
        host.stop()
        server.stop()
    for remote, local in pairs:
        assert remote.result.error is None, remote.result.error
        assert not [m for m in remote.result.messages if m["role"] == "tool"]  # all remote
        r, lo = remote.reward.to_dict(), local.reward.to_dict()
        assert r["reward"] == lo["reward"] == 1.0, r["failure_report"]
        assert r["predicted_hashes"] == lo["predicted_hashes"] == r["gold_hashes"]
        checks = r["reward_info"]["action_checks"] or []
        assert checks == (lo["reward_info"]["action_checks"] or [])
