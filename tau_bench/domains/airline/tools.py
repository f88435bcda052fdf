"""airline tools (spec: ../shared/specs/tau-bench-tools.md). TODO: being implemented."""

from __future__ import annotations

import json
from typing import Any

from tau_bench.db import EpisodeDB
from tau_bench.domains.tool import Tool

DOMAIN = "airline"


def think(db: EpisodeDB, thought: Any) -> str:
    return ""


def transfer_to_human_agents(db: EpisodeDB, summary: Any) -> str:
    return "Transfer successful"


def get_user_details(db: EpisodeDB, user_id: Any) -> str:
    users = db["users"]
    if user_id in users:
        return json.dumps(users[user_id])
    return "Error: user not found"


TOOLS: list[Tool] = [
    Tool.of(DOMAIN, get_user_details),
    Tool.of(DOMAIN, think),
    Tool.of(DOMAIN, transfer_to_human_agents),
]
