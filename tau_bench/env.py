"""Env: one episode's private database, the tool executor, and its action log."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tau_adapters.jsonsafe import JSONDepthError, depth_exceeds
from tau_adapters.protocol import ToolOutput
from tau_bench.db import EpisodeDB
from tau_bench.hashing import copy_json
from tau_bench.tasks import RESPOND_ACTION, Action, Task

if TYPE_CHECKING:
    from tau_bench.domains import Domain

ERROR_PREFIX = "Error:"
Q7_OBSERVATION = (
    "Error: send_certificate returned no result (the user already holds three certificates)"
)


RESPOND_IS_NO_TOOL = (
    "Error: respond is not a tool: a message to the user is the agent's text, not a tool call"
)
"""A tool call named `respond`. The original delivered its content to the user; here a tool
call never reaches the user, so logging it as a message would credit outputs the user never
saw (the outputs check reads `respond` actions): it is refused, and not logged."""


class Env:
    """Executes tool calls on a private copy of a domain DB; never raises.

    `execute` logs every call (as the original's action log did), runs the tool and
    returns its observation string. Argument and runtime errors become the original's
    `Error: ...` strings; an unknown name gives `Unknown action <name>`. Messages to the
    user are logged by `respond`, never by a tool call (`RESPOND_IS_NO_TOOL`).
    """

    def __init__(self, domain: Domain, task: Task | None = None) -> None:
        self.domain = domain
        self.task = task
        self.db: EpisodeDB = domain.base_db.episode()
        self.actions: list[Action] = []

    def reset(self, task: Task | None = None) -> None:
        """Start again from the pristine DB (cheap: no JSON is re-read)."""
        if task is not None:
            self.task = task
        self.db = self.domain.base_db.episode()
        self.actions = []

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        return self.domain.tool_schemas

    def is_terminate(self, name: str) -> bool:
        return name in self.domain.terminate_tools

    def execute(self, name: str, kwargs: Any) -> ToolOutput:
        """Run tool `name` with `kwargs`: the observation, typed; never an exception."""
        if depth_exceeds(kwargs):
            # Hostile arguments: every recursive walk below (copy, hash, score) would fail.
            self.actions.append(Action(name=str(name), kwargs={"__invalid_kwargs__": "too deep"}))
            return ToolOutput(f"Error: arguments {JSONDepthError()}", is_error=True)
        if name == RESPOND_ACTION:
            return ToolOutput(RESPOND_IS_NO_TOOL, is_error=True)
        logged = kwargs if isinstance(kwargs, dict) else {"__invalid_kwargs__": kwargs}
        self.actions.append(Action(name=str(name), kwargs=copy_json(logged)))
        tool = self.domain.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            return ToolOutput(f"Unknown action {name}", is_error=True)
        try:
            # Arguments are copied so the DB never aliases the caller's objects (spec Q5).
            result = tool(self.db, copy_json(kwargs))
        except Exception as exc:
            return ToolOutput(f"Error: {exc}", is_error=True)
        if result is None:
            return ToolOutput(Q7_OBSERVATION, is_error=True)
        text = result if isinstance(result, str) else str(result)
        # v1's tools report most failures by returning "Error: ..." text (spec §4): this
        # executor is the one place that knows it.
        return ToolOutput(text, is_error=text.startswith(ERROR_PREFIX))

    def respond(self, content: str) -> None:
        """Log a message the agent sent to the user (the outputs check reads these)."""
        self.actions.append(Action(name=RESPOND_ACTION, kwargs={"content": content}))

    def data_hash(self) -> str:
        return self.db.data_hash()

    def reward(self) -> Any:
        """Score the episode as the original did (see `tau_bench.scoring`)."""
        from tau_bench.scoring import compute_reward

        if self.task is None:
            raise ValueError("reward needs a task: pass one to Env(...) or reset(task)")
        return compute_reward(self, self.task)
