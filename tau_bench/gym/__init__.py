"""τ-bench as a gymnasium environment, for training agents with RL.

Importing this package registers `TauBench-v0`:

    import gymnasium, tau_bench.gym
    env = gymnasium.make("TauBench-v0", domain="retail", user_strategy="llm",
                         user_model="openai/gpt-4o", max_turns=30)

(`gymnasium.make("tau_bench.gym:TauBench-v0", ...)` imports it for you.) See
`tau_bench.gym.env.TauBenchEnv` and docs/training.md.
"""

from __future__ import annotations

try:
    import gymnasium
except ModuleNotFoundError:  # one line naming the extra, not a traceback
    from tau_adapters.extras import require

    require("gym")
    raise

from tau_bench.gym.actions import InvalidActionError, parse_action
from tau_bench.gym.env import TauBenchEnv
from tau_bench.gym.spaces import MAX_TEXT_LENGTH, ConversationText

ENV_ID = "TauBench-v0"

__all__ = [
    "ENV_ID",
    "MAX_TEXT_LENGTH",
    "ConversationText",
    "InvalidActionError",
    "TauBenchEnv",
    "parse_action",
]

if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="tau_bench.gym.env:TauBenchEnv")
