"""τ³ telecom domain (dual control): the agent manages lines and bills, the user holds a
simulated phone with its own tools. Registers `telecom` and `telecom-workflow` (same
tools, DBs and tasks; the tech-support part of the policy differs).

Modules: `models`/`user_models` (the two DBs), `tools` (agent), `user_tools` +
`user_helpers` + `device` (the phone), `sync` (post-call sync), `loading` (TOML sources,
policies), `bench` (timing of a full verification).

Process-global state: none. Upstream shares one VPN-details object per process (spec
§8.1); here every environment gets its own (see `user_tools`), matching the conformance
vectors, which were made as if every task ran in a fresh process.
"""

from __future__ import annotations

from tau_bench.tau3.domain import DomainSpec, register
from tau_bench.tau3.domains.telecom.loading import (
    agent_db_source,
    manual_policy,
    user_db_source,
    workflow_policy,
)
from tau_bench.tau3.domains.telecom.sync import sync
from tau_bench.tau3.domains.telecom.tools import TelecomTools
from tau_bench.tau3.domains.telecom.user_tools import TelecomUserTools

__all__ = ["TelecomTools", "TelecomUserTools"]

for _name, _policy in (("telecom", manual_policy), ("telecom-workflow", workflow_policy)):
    register(
        DomainSpec(
            name=_name,
            agent_toolkit=TelecomTools,
            agent_db=agent_db_source,
            policy=_policy,
            user_toolkit=TelecomUserTools,
            user_db=user_db_source,
            sync=sync,
            data_subdir="telecom",
            tasks_file="tasks.json",
            default_split="base",
            tools_json="telecom/tools.json",
            user_tools_json="telecom/user_tools.json",
            supports_solo=True,
        )
    )
