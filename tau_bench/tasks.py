"""Tasks: a user instruction, the ground-truth actions, and the outputs the agent must say."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tau_bench.task_files import TaskFileError, read_task_records, validation_summary

__all__ = ["RESPOND_ACTION", "Action", "Task", "TaskFileError", "load_tasks"]

RESPOND_ACTION = "respond"


class Action(BaseModel):
    """A tool call or a `respond` (text to the user) as the benchmark records it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    kwargs: dict[str, Any] = Field(default_factory=dict)


class Task(BaseModel):
    """One benchmark task. Extra keys (e.g. provenance of generated tasks) are kept."""

    model_config = ConfigDict(extra="allow")

    user_id: str
    instruction: str
    actions: list[Action] = Field(default_factory=list)
    outputs: list[str] = Field(default_factory=list)
    annotator: str | int | None = None


def load_tasks(path: Path) -> list[Task]:
    """Read a tasks file: a JSON array of tasks, or JSON lines (one task per line)."""
    raw = read_task_records(path)
    tasks = []
    for i, item in enumerate(raw):
        try:
            tasks.append(Task.model_validate(item))
        except ValidationError as exc:
            raise TaskFileError(f"{path}: task {i}: {validation_summary(exc)}") from None
    return tasks
