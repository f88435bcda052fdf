"""Mock domain data models (field order matters: it is the order of tool output)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

TaskStatus = Literal["pending", "completed"]


class Task(BaseModel):
    task_id: str
    title: str
    description: str | None = None
    status: TaskStatus


class User(BaseModel):
    user_id: str
    name: str
    tasks: list[str]


class MockDB(BaseModel):
    """Agent DB; unknown top-level keys are refused, nested ones dropped (as upstream)."""

    model_config = ConfigDict(extra="forbid")

    tasks: dict[str, Task]
    users: dict[str, User]


class Notification(BaseModel):
    model_config = ConfigDict(extra="forbid")

    notification_id: str
    message: str
    status: Literal["unread", "read"] = "unread"
    task_id: str | None = None


class MockUserDB(BaseModel):
    """User DB: the notification inbox."""

    model_config = ConfigDict(extra="forbid")

    notifications: dict[str, Notification] = Field(default_factory=dict)
