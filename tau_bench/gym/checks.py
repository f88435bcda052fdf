"""Argument checks of `TauBenchEnv`: a wrong type is one clear exception when the env is
built or reset, not a `TypeError` from deep inside, a silently odd episode budget, or a
model name rotated character by character."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def check_max_turns(max_turns: Any) -> None:
    """`max_turns` counts agent actions: an integer of at least 1 (not a bool or a float)."""
    if isinstance(max_turns, bool) or not isinstance(max_turns, int):
        raise TypeError(f"max_turns must be an integer, not {type(max_turns).__name__}")
    if max_turns < 1:
        raise ValueError("max_turns must be at least 1")


def model_list(models: str | Iterable[str] | None) -> list[str]:
    """The user-model rotation: a list of names, or one string of comma-separated names
    (as `domain` takes them); a bare string is never split into its characters."""
    if models is None:
        return []
    parts = models.split(",") if isinstance(models, str) else list(models)
    names = []
    for part in parts:
        if not isinstance(part, str):
            raise TypeError(f"user_models must be model names, not {type(part).__name__}")
        if part.strip():
            names.append(part.strip())
    return names


def check_options(options: Any) -> dict[str, Any]:
    """A copy of `reset`'s `options`: a mapping or None."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"reset options must be a dict or None, not {type(options).__name__}")
    return dict(options)
