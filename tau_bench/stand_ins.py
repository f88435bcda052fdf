"""What a hosted platform's local stand-in (an emulator, a reference agent) plays.

A stand-in's client names the episode by coordinates it sends with the conversation -
`env`, `task_split`, `task_id`, `user_id`, `trial` (Dialogflow session parameters, CES
session variables, ...) - and the stand-in's brain needs the matching `SessionContext`.
One lookup, shared by every stand-in, so they all read those coordinates the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tau_adapters.protocol import SessionContext
from tau_bench.suites import UnknownDomainError, UnknownSplitError, load_domain


class TaskLookupError(ValueError):
    """The coordinates name no task (unknown env or split, a task id out of range...)."""


def _as_int(value: Any, key: str, what: str) -> int:
    try:
        return int(float(value))
    except (TypeError, ValueError):
        raise TaskLookupError(f"{what} {key} must be a number") from None


def session_from(
    values: Mapping[str, Any],
    session_id: str,
    default_env: str,
    data_dir: Path | str | None = None,
    *,
    what: str = "session parameter",
) -> SessionContext:
    """The brain's view of the episode the client named (`what` names the values in
    errors: "session parameter", "session variable")."""
    env = str(values.get("env") or default_env)
    try:
        domain = load_domain(env, data_dir)
    except UnknownDomainError as exc:
        raise TaskLookupError(str(exc)) from None
    split = str(values.get("task_split") or domain.default_split)
    task = None
    task_id: int | None = None
    if values.get("task_id") not in (None, ""):
        task_id = _as_int(values["task_id"], "task_id", what)
        try:
            tasks = domain.tasks(split)
        except UnknownSplitError as exc:
            raise TaskLookupError(str(exc)) from None
        if not 0 <= task_id < len(tasks):
            raise TaskLookupError(f"task_id {task_id} out of range for {env} {split}")
        task = tasks[task_id]
    user_id = values.get("user_id") or (getattr(task, "user_id", None) if task else None)
    return SessionContext(
        session_id=session_id,
        domain=env,
        tools=domain.tool_schemas,
        policy=domain.policy,
        task_id=task_id,
        user_id=str(user_id) if user_id else None,
        trial=_as_int(values.get("trial") or 0, "trial", what),
        metadata={"terminate_tools": sorted(domain.terminate_tools), "task_split": split},
        task=task,
    )
