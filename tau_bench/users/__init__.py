"""User simulators. `build_user(strategy, ...)` makes one per episode."""

from __future__ import annotations

from typing import Any

from tau_adapters.protocol import UserSimulator

USER_STRATEGIES = ("llm", "react", "verify", "reflection", "human", "scripted", "tau3")


class UnknownUserStrategyError(ValueError):
    pass


def build_user(strategy: str, **options: Any) -> UserSimulator:
    """A fresh user simulator. Options: model, provider, api_base, temperature, seed,
    affirmative (scripted), max_turns (scripted), and whatever the strategy documents."""
    if strategy == "scripted":
        from tau_bench.users.scripted import DEFAULT_AFFIRMATIVE, ScriptedUser

        return ScriptedUser(
            affirmative=options.get("affirmative") or DEFAULT_AFFIRMATIVE,
            max_turns=int(options.get("max_turns") or 10),
        )
    if strategy == "tau3":
        from tau_bench.users.tau3_user import build_tau3_user

        return build_tau3_user(**options)
    if strategy not in USER_STRATEGIES:
        raise UnknownUserStrategyError(
            f"unknown user strategy {strategy!r} (available: {', '.join(USER_STRATEGIES)})"
        )
    from tau_bench.users.llm_users import build_llm_user  # implemented in llm_users.py

    return build_llm_user(strategy, **options)
