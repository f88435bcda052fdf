"""Mock domain toolkits; class names are upstream's because error texts name them."""

from __future__ import annotations

from typing import Any

from tau_bench.tau3.domains.mock.models import MockDB, MockUserDB, Notification, Task, User
from tau_bench.tau3.toolkit import ToolKind, Toolkit, tool


class MockTools(Toolkit):
    """Agent tools: create tasks, list users, update a task's status."""

    db: MockDB

    @tool(ToolKind.WRITE)
    def create_task(self, user_id: str, title: str, description: str | None = None) -> Task:
        if user_id not in self.db.users:
            raise ValueError(f"User {user_id} not found")
        task_id = f"task_{len(self.db.tasks) + 1}"
        task = Task(task_id=task_id, title=title, description=description, status="pending")
        self.db.tasks[task_id] = task
        self.db.users[user_id].tasks.append(task_id)
        return task

    @tool(ToolKind.READ)
    def get_users(self) -> list[User]:
        return list(self.db.users.values())

    @tool(ToolKind.WRITE)
    def update_task_status(self, task_id: str, status: Any) -> Task:
        if task_id not in self.db.tasks:
            raise ValueError(f"Task {task_id} not found")
        task = self.db.tasks[task_id]
        task.status = status  # not validated, as upstream (spec §1.3)
        return task

    def assert_number_of_tasks(self, user_id: str, expected_number: int) -> bool:
        if user_id not in self.db.users:
            raise ValueError(f"User {user_id} not found")
        return len(self.db.users[user_id].tasks) == expected_number

    def assert_task_status(self, task_id: str, expected_status: str) -> bool:
        if task_id not in self.db.tasks:
            raise ValueError(f"Task {task_id} not found")
        return self.db.tasks[task_id].status == expected_status

    @tool(ToolKind.GENERIC)
    def transfer_to_human_agents(self, summary: str) -> str:
        return "Transfer successful"


class MockUserTools(Toolkit):
    """User tools: a notification inbox."""

    db: MockUserDB

    @tool(ToolKind.READ)
    def check_notifications(self) -> list[Notification]:
        return list(self.db.notifications.values())

    @tool(ToolKind.WRITE)
    def dismiss_notification(self, notification_id: str) -> str:
        if notification_id not in self.db.notifications:
            raise ValueError(f"Notification {notification_id} not found")
        self.db.notifications[notification_id].status = "read"
        return f"Notification {notification_id} dismissed"

    def add_notification(
        self, notification_id: str, message: str, task_id: str | None = None
    ) -> Notification:
        note = Notification(notification_id=notification_id, message=message, task_id=task_id)
        self.db.notifications[notification_id] = note
        return note

    def assert_notification_status(self, notification_id: str, expected_status: str) -> bool:
        if notification_id not in self.db.notifications:
            raise ValueError(f"Notification {notification_id} not found")
        return self.db.notifications[notification_id].status == expected_status
