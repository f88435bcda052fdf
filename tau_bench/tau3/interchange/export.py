"""`tau export --format tau2`: our τ³ runs as τ² results files.

One file per τ³ domain of a run (`<output>/<run label>.<domain>.json`): `info` (agent and
user models, the domain's policy), `tasks` (the run's task definitions as recorded),
`simulations` (one per scored episode). Each simulation's messages are the trajectory
the τ³ evaluator scored: the task's message history (or the agent greeting), then the
conversation with tool calls carrying their requestor and tool messages their `error`
flag — recomputed by replaying the calls on a fresh environment, since our log keeps
the tool text only. `reward_info` is the run's own evaluation. Errored episodes (no
reward) are left out and counted.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tau_bench.records import EpisodeRecord
from tau_bench.results import write_json_atomic
from tau_bench.tau3.domain import LoadedDomain
from tau_bench.tau3.environment import Environment
from tau_bench.tau3.interchange.schema import TERMINATION_REASONS, Results
from tau_bench.tau3.known_issues import split_task_key
from tau_bench.tau3.messages import Message, ToolCall
from tau_bench.tau3.replay import GREETING
from tau_bench.tau3.tasks import Task

__all__ = ["Exported", "export_records", "record_domain", "simulation_messages"]

MAX_ERRORS = 10  # the original's default, recorded in `info`
MAX_STEPS = 200
_STOPS = {
    "agent_end": "agent_stop",
    "agent_handoff": "agent_stop",
    "terminate_tool": "agent_stop",
    "max_user_turns": "max_steps",
    "error": "agent_error",
}


@dataclass
class Exported:
    path: Path
    simulations: int
    skipped_errors: int
    notes: list[str] = field(default_factory=list)


def record_domain(record: EpisodeRecord, env: str | None) -> str | None:
    """`airline` for a record of a `tau3/airline` run; None when not a τ³ record."""
    suite_domain = record.domain or split_task_key(record.task_id, env)[0]
    if not suite_domain or not suite_domain.startswith("tau3/"):
        return None
    return suite_domain.split("/", 1)[1]


def _calls(message: dict[str, Any], role: str) -> list[ToolCall]:
    calls = []
    for raw in message.get("tool_calls") or []:
        fn = raw.get("function")
        if fn is not None:  # OpenAI shape: arguments as JSON text
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = {}
            name = fn.get("name", "")
        else:
            args, name = raw.get("arguments") or {}, raw.get("name", "")
        requestor = raw.get("requestor") or ("user" if role == "user" else "assistant")
        calls.append(ToolCall(str(raw.get("id") or ""), str(name), args, requestor))
    return calls


def simulation_messages(
    domain: LoadedDomain, task: Task, messages: list[dict[str, Any]]
) -> tuple[list[Message], int]:
    """The τ³ trajectory of a recorded conversation, and how many tool texts differ from
    a fresh replay (0 when the tools behave as they did in the run)."""
    history = task.history()
    env = Environment(domain)
    state = task.initial_state
    env.set_state(
        state.initialization_data if state else None,
        state.initialization_actions if state else None,
        history,
    )
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


def export_records(
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
    """Write `records` (one τ³ domain) as a τ² results file at `path`, validated."""
    tasks: dict[str, dict[str, Any]] = {}
    sims: list[dict[str, Any]] = []
    skipped = differs = 0
    for r in records:
        if r.is_error or not r.reward_info:
            skipped += 1
            continue
        task = Task.from_dict(r.task)
        tasks.setdefault(task.id, task.raw)
        trajectory, d = simulation_messages(domain, task, r.messages)
        differs += d
        start, end = _times(r)
        sims.append(
            {
                "id": str(
                    uuid.uuid5(uuid.NAMESPACE_URL, f"tau-export/{label}/{task.id}/{r.trial}")
                ),
                "task_id": task.id,
                "timestamp": end,
                "start_time": start,
                "end_time": end,
                "duration": r.duration,
                "termination_reason": _termination(r),
                "agent_cost": r.agent_cost,
                "user_cost": r.user_cost,
                "reward_info": r.reward_info.get("reward_info", r.reward_info),
                "messages": [_message_dict(m, i, start) for i, m in enumerate(trajectory)],
                "trial": r.trial,
                "seed": r.seed,
                "mode": "half_duplex",
            }
        )
    data = {
        "timestamp": datetime.now().astimezone().isoformat(timespec="seconds"),
        "info": {
            "git_commit": "",
            "num_trials": num_trials,
            "max_steps": MAX_STEPS,
            "max_errors": MAX_ERRORS,
            "user_info": {"implementation": "user_simulator", "llm": user_model, "llm_args": {}},
            "agent_info": {"implementation": agent or "llm_agent", "llm": model, "llm_args": {}},
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
    Results.model_validate(data)
    write_json_atomic(path, data)
    notes = []
    if differs:
        notes.append(f"{differs} tool message(s) differ from a fresh replay (kept as recorded)")
    return Exported(path=path, simulations=len(sims), skipped_errors=skipped, notes=notes)
