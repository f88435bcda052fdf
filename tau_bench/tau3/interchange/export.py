"""`tau export --format tau2`: our τ³ runs as τ² results files.

One file per τ³ domain of a run (`<output>/<run label>.<domain>.json`): `info` (agent and
user models, the domain's policy), `tasks` (the run's task definitions as recorded),
`simulations` (one per scored episode). Each simulation's messages are the trajectory
the τ³ evaluator scored: the task's message history (or the agent greeting), then the
conversation with tool calls carrying their requestor and tool messages their `error`
flag — recomputed by replaying the calls on a fresh environment, since our log keeps
the tool text only. `reward_info` is the run's own evaluation. Errored episodes (no
reward) are left out and counted. A tool call whose arguments are not a JSON object
(nor within `jsonsafe.MAX_DEPTH` levels) is left out with its tool message, as in the
run's own trajectory: it never ran. Numbers JSON has no spelling for (NaN, ±Infinity) in
free-form values are written as the strings "NaN", "Infinity", "-Infinity", so the file
is strict JSON. A record that cannot become a τ² simulation is one `ExportError` naming
the episode.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tau_adapters import jsonsafe
from tau_bench.records import EpisodeRecord
from tau_bench.results import write_json_atomic
from tau_bench.task_files import validation_summary
from tau_bench.tau3.domain import LoadedDomain
from tau_bench.tau3.environment import Environment
from tau_bench.tau3.interchange.schema import TERMINATION_REASONS, Results, SimulationRun
from tau_bench.tau3.known_issues import split_task_key
from tau_bench.tau3.messages import Message, ToolCall
from tau_bench.tau3.replay import GREETING
from tau_bench.tau3.tasks import Task

__all__ = [
    "ExportError",
    "Exported",
    "build_export",
    "record_domain",
    "simulation_messages",
    "write_export",
]

MAX_ERRORS = 10  # the original's default, recorded in `info`
MAX_STEPS = 200
_STOPS = {
    "agent_end": "agent_stop",
    "agent_handoff": "agent_stop",
    "terminate_tool": "agent_stop",
    "max_user_turns": "max_steps",
    "error": "agent_error",
}


class ExportError(ValueError):
    """A record that cannot become a τ² simulation, or records that collide in one file;
    the message names the episode."""


@dataclass
class Exported:
    path: Path
    simulations: int
    skipped_errors: int
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict, repr=False)
    """The validated τ² results file, until `write_export` writes it."""


def record_domain(record: EpisodeRecord, env: str | None) -> str | None:
    """`airline` for a record of a `tau3/airline` run; None when not a τ³ record."""
    suite_domain = record.domain or split_task_key(record.task_id, env)[0]
    if not suite_domain or not suite_domain.startswith("tau3/"):
        return None
    return suite_domain.split("/", 1)[1]


def _arguments(value: Any) -> dict[str, Any] | None:
    """A call's arguments as the run decoded them (JSON text; empty text or none: `{}`),
    or None when they are not a JSON object: the run answered such a call with an error
    without running it, and left it out of the τ³ trajectory, whose `ToolCall` cannot
    hold it. Text nested deeper than `jsonsafe.MAX_DEPTH` counts as not an object."""
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            value = jsonsafe.loads(value)
        except ValueError:  # not JSON, nested too deep, an integer too long to convert
            return None
    if not isinstance(value, dict) or jsonsafe.depth_exceeds(value):
        return None
    return value


def _calls(message: dict[str, Any], role: str) -> list[ToolCall]:
    """The message's tool calls that ran (see `_arguments`)."""
    calls = []
    for raw in message.get("tool_calls") or []:
        fn = raw.get("function")
        if fn is not None:  # OpenAI shape: arguments as JSON text
            args, name = _arguments(fn.get("arguments")), fn.get("name", "")
        else:
            args, name = _arguments(raw.get("arguments")), raw.get("name", "")
        if args is None:
            continue
        requestor = raw.get("requestor") or ("user" if role == "user" else "assistant")
        calls.append(ToolCall(str(raw.get("id") or ""), str(name), args, requestor))
    return calls


def _initial_env(domain: LoadedDomain, task: Task, history: list[Message]) -> Environment:
    """A fresh environment in `task`'s initial state. The task comes from the log, so a
    state that cannot be applied (any exception: data the DB model refuses, an unknown
    env function, a history that does not replay) is that record's `ExportError`."""
    env = Environment(domain)
    state = task.initial_state
    try:
        env.set_state(
            state.initialization_data if state else None,
            state.initialization_actions if state else None,
            history,
        )
    except Exception as exc:  # RecursionError included: a RuntimeError
        raise ExportError(f"initial state: {type(exc).__name__}: {_first_line(exc)}") from None
    return env


def simulation_messages(
    domain: LoadedDomain, task: Task, messages: list[dict[str, Any]]
) -> tuple[list[Message], int]:
    """The τ³ trajectory of a recorded conversation, and how many tool texts differ from
    a fresh replay (0 when the tools behave as they did in the run)."""
    history = task.history()
    env = _initial_env(domain, task, history)
    out = list(history) or [Message(role="assistant", content=GREETING)]
    pending: dict[str, ToolCall] = {}
    differs = 0
    for m in messages:
        role = str(m.get("role"))
        if role in ("assistant", "user"):
            calls = _calls(m, role)
            text = m.get("content")
            if calls:
                pending.update({c.id: c for c in calls})
                out.append(Message(role=role, content=text or None, tool_calls=calls))
            elif text is not None:
                out.append(Message(role=role, content=str(text)))
        elif role == "tool":
            call = pending.pop(str(m.get("tool_call_id") or m.get("id")), None)
            if call is None:
                continue
            result = env.get_response(call)
            recorded = m.get("content")
            differs += recorded is not None and recorded != result.content
            out.append(
                Message(
                    role="tool",
                    content=recorded if recorded is not None else result.content,
                    id=call.id,
                    requestor=call.requestor,
                    error=result.error,
                )
            )
    return out, differs


def _message_dict(message: Message, turn: int, timestamp: str) -> dict[str, Any]:
    data = message.to_dict()
    if message.role != "tool":
        data.setdefault("tool_calls", None)
    return {**data, "turn_idx": turn, "timestamp": timestamp}


def _termination(record: EpisodeRecord) -> str:
    info = record.reward_info or {}
    reason = info.get("termination_reason")
    if reason in TERMINATION_REASONS:
        return str(reason)
    # Our conversation's stop reasons, as the suite maps them (tau_bench.suites.tau3_env).
    mapped = _STOPS.get(record.stop_reason, record.stop_reason)
    return mapped if mapped in TERMINATION_REASONS else "agent_error"


def _times(record: EpisodeRecord) -> tuple[str, str]:
    try:
        start = datetime.fromisoformat(record.started_at)
    except ValueError:
        start = datetime.fromtimestamp(0).astimezone()
    return start.isoformat(), (start + timedelta(seconds=record.duration)).isoformat()


def _first_line(exc: BaseException) -> str:
    """Why `exc` happened, on one line (a pydantic error: its first error's field path)."""
    if isinstance(exc, ValidationError):
        text = validation_summary(exc)
    elif isinstance(exc, RecursionError):
        text = "nested too deep"
    else:
        text = str(exc) or type(exc).__name__
    lines = text.replace("Value error, ", "").splitlines()
    return lines[0] if lines else ""


def _episode(label: str, record: EpisodeRecord) -> str:
    return f"{label}: task {record.task_id} trial {record.trial}"


def _simulation_id(label: str, task_id: str, trial: int) -> str:
    """Stable across exports of the same run: (run, task, trial) names one episode."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"tau-export/{label}/{task_id}/{trial}"))


def _simulation(
    domain: LoadedDomain, record: EpisodeRecord, label: str
) -> tuple[Task, dict[str, Any], int]:
    """(task, τ² simulation, tool texts that differ from a fresh replay) of one scored
    record, the simulation validated; raises what the record's data makes fail."""
    task = Task.from_dict(record.task)
    trajectory, differs = simulation_messages(domain, task, record.messages)
    start, end = _times(record)
    info = record.reward_info or {}
    sim = {
        "id": _simulation_id(label, task.id, record.trial),
        "task_id": task.id,
        "timestamp": end,
        "start_time": start,
        "end_time": end,
        "duration": record.duration,
        "termination_reason": _termination(record),
        "agent_cost": record.agent_cost,
        "user_cost": record.user_cost,
        "reward_info": info.get("reward_info", info),
        "messages": [_message_dict(m, i, start) for i, m in enumerate(trajectory)],
        "trial": record.trial,
        "seed": record.seed,
        "mode": "half_duplex",
    }
    SimulationRun.model_validate(sim)
    return task, sim, differs


def _spelled(value: Any) -> Any:
    """`value` with every float JSON has no spelling for (NaN, ±Infinity) replaced by the
    string "NaN", "Infinity" or "-Infinity" (as JSON-proto writes such numbers), so the
    file is strict JSON that any reader, our `tau rescore` included, accepts. Iterative:
    safe on any depth."""
    return jsonsafe.map_leaves(value, _spelled_number)


def _spelled_number(value: Any) -> Any:
    if not isinstance(value, float) or math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def write_export(done: Exported, label: str) -> None:
    """Write what `build_export` made; a value JSON cannot encode is an `ExportError`, a
    file system refusal an `OSError`."""
    try:
        write_json_atomic(done.path, done.data)
    except (ValueError, RecursionError) as exc:
        raise ExportError(f"{label}: cannot export to {done.path}: {_first_line(exc)}") from None


def build_export(
    records: list[EpisodeRecord],
    domain: LoadedDomain,
    path: Path,
    *,
    label: str,
    num_trials: int,
    agent: str | None,
    model: str | None,
    user_model: str | None,
    seed: int | None = None,
) -> Exported:
    """`records` (one τ³ domain) as a validated τ² results file for `path`, not written:
    a caller exporting several files checks them all before it writes any.

    A record that cannot be exported, or a (task, trial) recorded twice (a tasks file
    listing a task twice), raises `ExportError` naming the episode."""
    tasks: dict[str, dict[str, Any]] = {}
    sims: list[dict[str, Any]] = []
    seen: dict[str, EpisodeRecord] = {}
    skipped = differs = 0
    for r in records:
        if r.is_error or not r.reward_info:
            skipped += 1
            continue
        try:
            task, sim, d = _simulation(domain, r, label)
        except (ValueError, RecursionError) as exc:  # ValidationError is a ValueError
            raise ExportError(f"{_episode(label, r)}: {_first_line(exc)}") from None
        if sim["id"] in seen:
            raise ExportError(
                f"{_episode(label, r)}: τ³ task {task.id!r} trial {r.trial} is recorded twice "
                f"(also as task {seen[sim['id']].task_id}): a τ² results file holds each "
                "once; export the episodes separately"
            )
        seen[sim["id"]] = r
        tasks.setdefault(task.id, task.raw)
        sims.append(sim)
        differs += d
    data = _spelled(
        {
            "timestamp": datetime.now().astimezone().isoformat(timespec="seconds"),
            "info": {
                "git_commit": "",
                "num_trials": num_trials,
                "max_steps": MAX_STEPS,
                "max_errors": MAX_ERRORS,
                "user_info": {
                    "implementation": "user_simulator",
                    "llm": user_model,
                    "llm_args": {},
                },
                "agent_info": {
                    "implementation": agent or "llm_agent",
                    "llm": model,
                    "llm_args": {},
                },
                "environment_info": {
                    "domain_name": domain.name,
                    "policy": domain.policy(),
                    "tool_defs": None,
                },
                "seed": seed,
            },
            "tasks": list(tasks.values()),
            "simulations": sims,
        }
    )
    try:
        Results.model_validate(data)
    except (ValueError, RecursionError) as exc:
        raise ExportError(f"{label}: cannot export to {path}: {_first_line(exc)}") from None
    notes = []
    if differs:
        notes.append(f"{differs} tool message(s) differ from a fresh replay (kept as recorded)")
    return Exported(
        path=path, simulations=len(sims), skipped_errors=skipped, notes=notes, data=data
    )
