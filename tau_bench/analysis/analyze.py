"""`tau analyze`: an LLM reads each failed episode and says whose fault it was and how.

As τ-bench's automatic error identification: the fault's author (user, agent,
environment) and its type (goal partially completed, wrong tool, wrong tool argument,
unintended action, other), plus a one-paragraph description. One model call per failed
episode through `tau_bench.llm.complete` (transport retries, cost, provider caps), asking
for JSON with a schema and validating it with pydantic. A reply that does not validate
is retried once with the validation error; a second bad reply - or a call that fails
for good, answers something of an odd shape or overruns its deadline (`call_deadline`) -
is recorded as unclassified with a one-line reason, never raised: one bad episode never
stops the analysis.

What the judge writes is untrusted: every result is masked (`tau_adapters.redaction`)
before anyone sees it - the judge's API key, every secret-looking environment value, and
anything shaped like a key or token, also where a JSON or URL encoder spelled it. Results
are collected as they finish, into an `Analysis` the caller may hold, so an interrupted
analysis keeps what it paid for.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tau_adapters.jsonsafe import printable
from tau_adapters.redaction import environment_secrets, mask_encoded, redact_text
from tau_bench.analysis.loading import Run
from tau_bench.analysis.mt_bench import action_text
from tau_bench.json_decode import loads
from tau_bench.llm import LLMConfig, LLMError, complete
from tau_bench.records import EpisodeRecord, is_success
from tau_bench.task_ids import TaskId, sort_key

FAULT_AUTHORS = ("user", "agent", "environment")
FAULT_TYPES = (
    "goal_partially_completed",
    "used_wrong_tool",
    "used_wrong_tool_argument",
    "took_unintended_action",
    "other",
)
MAX_OBSERVATION_CHARS = 1500


class FaultAnalysis(BaseModel):
    """What the model must answer (validated; extra keys are refused)."""

    model_config = ConfigDict(extra="forbid")

    fault_author: Literal["user", "agent", "environment"]
    fault_type: Literal[
        "goal_partially_completed",
        "used_wrong_tool",
        "used_wrong_tool_argument",
        "took_unintended_action",
        "other",
    ]
    description: str = Field(min_length=1, max_length=2000)


RESPONSE_FORMAT = {
    "type": "json_schema",
    "json_schema": {
        "name": "fault_analysis",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                "fault_author": {"type": "string", "enum": list(FAULT_AUTHORS)},
                "fault_type": {"type": "string", "enum": list(FAULT_TYPES)},
                "description": {"type": "string"},
            },
            "required": ["fault_author", "fault_type", "description"],
            "additionalProperties": False,
        },
    },
}

SYSTEM_PROMPT = """\
You review failed conversations of a customer-service agent benchmark. A simulated \
user (following a hidden instruction) talks to an agent that must follow a policy and \
use tools on a database. The episode failed: the final database differs from the \
expected one, or the agent did not tell the user required information.

Decide who caused the failure:
- "user": the simulated user deviated from its instruction (wrong details, gave up, \
asked for something else);
- "agent": the agent made a mistake;
- "environment": a tool or the task itself is wrong (a tool error that is not the \
agent's fault, an impossible or contradictory task).

and the kind of failure:
- "goal_partially_completed": only part of what the user wanted was done;
- "used_wrong_tool": the agent called a tool that does not fit the need;
- "used_wrong_tool_argument": the right tool with wrong arguments;
- "took_unintended_action": an action the user did not ask for or the policy forbids;
- "other": anything else (say what in the description).

Answer with one JSON object only, no prose around it:
{"fault_author": "user" | "agent" | "environment", "fault_type": "goal_partially_completed" \
| "used_wrong_tool" | "used_wrong_tool_argument" | "took_unintended_action" | "other", \
"description": "one short paragraph: what went wrong, citing the step"}"""


@dataclass
class EpisodeAnalysis:
    run: str
    task_id: TaskId
    trial: int
    reward: float | None
    status: str  # "classified" or "unclassified"
    fault_author: str | None = None
    fault_type: str | None = None
    description: str = ""
    error: str | None = None
    attempts: int = 0
    cost: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- the prompt ------------------------------------------------------------------------


def _call_text(name: str, arguments: Any) -> str:
    return action_text(name, arguments)  # bounded decoding, secrets masked


def _content(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in value)
    return "" if value is None else str(value)


def _clip(text: str, limit: int = MAX_OBSERVATION_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"


def conversation_text(messages: Sequence[dict[str, Any]]) -> str:
    """The trajectory as plain text lines (the policy is given separately)."""
    lines = []
    for m in messages:
        role = m.get("role")
        if role == "system":
            continue
        text = _content(m.get("content"))
        if role == "user":
            lines.append(f"[user] {text}")
        elif role == "assistant":
            if text:
                lines.append(f"[agent] {text}")
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                lines.append(
                    f"[agent -> tool] {_call_text(str(fn.get('name')), fn.get('arguments'))}"
                )
        elif role == "tool":
            lines.append(f"[tool {m.get('name', '')}] {_clip(text)}")
    return "\n".join(lines)


def episode_prompt(record: EpisodeRecord) -> str:
    """What the judge reads about one failed episode."""
    task = record.task or {}
    info = record.reward_info or {}
    actions = info.get("actions") or task.get("actions") or []
    parts = ["# Instruction given to the simulated user", str(task.get("instruction", "?"))]
    parts += [
        "# Expected actions (a correct agent's tool calls)",
        "\n".join(_call_text(a.get("name", "?"), a.get("kwargs", {})) for a in actions) or "(none)",
    ]
    outputs = task.get("outputs") or []
    if outputs:
        parts += ["# Information the agent had to tell the user", ", ".join(map(str, outputs))]
    scoring = [f"reward {record.reward}"]
    r_actions = info.get("r_actions", (info.get("info") or {}).get("r_actions"))
    if r_actions is not None:
        scoring.append("final database matches" if r_actions == 1 else "final database differs")
    missing = [o for o, ok in (info.get("outputs") or {}).items() if not ok]
    if missing:
        scoring.append("not told to the user: " + ", ".join(missing))
    for d in (info.get("db_diff") or [])[:15]:
        scoring.append(
            f"{d.get('table')}/{d.get('record')} {d.get('path')}: agent "
            f"{json.dumps(d.get('agent'), ensure_ascii=False)} expected "
            f"{json.dumps(d.get('expected'), ensure_ascii=False)}"
        )
    parts += ["# How the episode was scored", "\n".join(scoring)]
    policy = next(
        (_content(m.get("content")) for m in record.messages if m.get("role") == "system"), ""
    )
    if policy:
        parts += ["# The agent's policy", policy]
    parts += ["# Conversation", conversation_text(record.messages)]
    return "\n\n".join(parts)


# -- parsing ---------------------------------------------------------------------------

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def parse_reply(text: str) -> FaultAnalysis:
    """The model's JSON (code fences tolerated); ValueError says what is wrong."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        data = loads(body)  # bounded: nesting, long integers
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None
    try:
        return FaultAnalysis.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "object"
        raise ValueError(f"{where}: {first['msg']}") from None


# -- calls -----------------------------------------------------------------------------


def judge_secrets(config: LLMConfig) -> list[str]:
    """What must never be written from a judge's reply: the API key it was sent (an
    `api_key` in `config.extra`) and secret-looking environment values (OPENAI_API_KEY...)."""
    key = config.extra.get("api_key") if config.extra else None
    return [*([key] if isinstance(key, str) and key else []), *environment_secrets()]


def masked(result: EpisodeAnalysis, secrets: Sequence[str]) -> EpisodeAnalysis:
    """`result` with every secret masked in each of its strings (see the module docstring)."""
    changes: dict[str, Any] = {
        f.name: redact_text(mask_encoded(value, secrets), secrets)
        for f in fields(result)
        if isinstance(value := getattr(result, f.name), str)
    }
    return replace(result, **changes)


CALL_MARGIN = 30.0
"""Seconds a judge call may take beyond its config's `timeout` before it is given up
(`call_deadline`)."""

MAX_REASON_CHARS = 500
"""The longest reason an unclassified result gives (`one_line`)."""


def call_deadline(config: LLMConfig) -> float:
    """Seconds one judge call may take in all: its `timeout` plus `CALL_MARGIN`. The
    LLM layer bounds each attempt; this bounds the call whatever happens below it (a
    server that drips its body), so one episode never holds the analysis."""
    return config.deadline() + CALL_MARGIN


def one_line(text: str) -> str:
    """`text` as one short terminal-safe line: whitespace runs (newlines) made one space,
    control characters escaped (`jsonsafe.printable`), at most `MAX_REASON_CHARS`."""
    flat = printable(" ".join(text.split()))
    return flat if len(flat) <= MAX_REASON_CHARS else flat[: MAX_REASON_CHARS - 1] + "…"


def failure_reason(exc: Exception, config: LLMConfig) -> str:
    """Why a judge call gave no result, for the unclassified record."""
    if isinstance(exc, LLMError):
        return one_line(f"{exc.kind}: {exc}")
    if isinstance(exc, TimeoutError):
        return f"timeout: no answer within {call_deadline(config):g} s"
    return one_line(f"judge call failed: {type(exc).__name__}: {exc}")


async def classify(config: LLMConfig, run: str, record: EpisodeRecord) -> EpisodeAnalysis:
    """One failed episode classified, secrets masked; never raises (except cancellation):
    anything a judge call raises - a transport error, a reply of an odd shape, the call
    deadline - leaves the episode unclassified with a one-line reason."""
    result = EpisodeAnalysis(run, record.task_id, record.trial, record.reward, "unclassified")
    try:
        await _classify(config, record, result)
    except Exception as exc:
        result.status, result.error = "unclassified", failure_reason(exc, config)
    return masked(result, judge_secrets(config))


async def _classify(config: LLMConfig, record: EpisodeRecord, result: EpisodeAnalysis) -> None:
    """Fill `result` in: at most two judge calls, the second told what was wrong."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": episode_prompt(record)},
    ]
    for attempt in (1, 2):
        result.attempts = attempt
        async with asyncio.timeout(call_deadline(config)):
            completion = await complete(config, messages, response_format=RESPONSE_FORMAT)
        cost = completion.usage.cost
        result.cost += cost if math.isfinite(cost) else 0.0
        try:
            analysis = parse_reply(completion.content)
        except ValueError as exc:
            result.error = one_line(f"malformed reply: {exc}")
            messages += [
                {"role": "assistant", "content": completion.content},
                {
                    "role": "user",
                    "content": f"That reply is not valid ({exc}). Answer again with only "
                    "the JSON object, using exactly the keys and values described.",
                },
            ]
            continue
        result.status = "classified"
        result.error = None
        result.fault_author = analysis.fault_author
        result.fault_type = analysis.fault_type
        result.description = analysis.description
        return


def failed_records(run: Run, limit: int | None = None) -> list[EpisodeRecord]:
    """Scored episodes that did not succeed, by task then trial (errored ones are not
    failures of the agent: they have their own error)."""
    failed = sorted(
        (r for r in run.records if not r.is_error and not is_success(r.reward)),
        key=lambda r: (sort_key(r.task_id), r.trial),
    )
    return failed if limit is None else failed[:limit]


@dataclass
class Analysis:
    """The judge's results (in the order of the runs, then task, then trial) and each
    run's failed-episode count; `interrupted` when the analysis was stopped part way."""

    model: str
    results: list[EpisodeAnalysis]
    failed: dict[str, int]
    interrupted: bool = False
    _positions: list[int] = field(default_factory=list, repr=False)

    def add(self, position: int, result: EpisodeAnalysis) -> None:
        """Keep `result`, finished in any order, at its place among the others."""
        at = bisect.bisect(self._positions, position)
        self._positions.insert(at, position)
        self.results.insert(at, result)

    def summary(self) -> dict[str, Any]:
        classified = [r for r in self.results if r.status == "classified"]
        agent = [r for r in classified if r.fault_author == "agent"]
        return {
            "analyzed": len(self.results),
            "classified": len(classified),
            "unclassified": len(self.results) - len(classified),
            "fault_author": dict(Counter(r.fault_author for r in classified)),
            "fault_type": dict(Counter(r.fault_type for r in classified)),
            "fault_type_of_agent_faults": dict(Counter(r.fault_type for r in agent)),
            "cost": sum(r.cost for r in self.results),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "interrupted": self.interrupted,
            "failed_episodes": self.failed,
            "summary": self.summary(),
            "results": [r.to_dict() for r in self.results],
        }


async def analyze_runs(
    runs: Sequence[Run],
    config: LLMConfig,
    *,
    max_failed: int | None = None,
    max_concurrency: int = 1,
    into: Analysis | None = None,
) -> Analysis:
    """Classify up to `max_failed` failed episodes of each run, `max_concurrency` at once.

    Each result joins `into` (a new Analysis by default) as soon as it is finished: when
    the analysis is cancelled (Ctrl-C), `into` holds every result already paid for."""
    if max_concurrency < 1:
        raise ValueError("max_concurrency must be at least 1")
    analysis = into if into is not None else Analysis(model=config.model, results=[], failed={})
    semaphore = asyncio.Semaphore(max_concurrency)
    jobs: list[tuple[str, EpisodeRecord]] = []
    for run in runs:
        analysis.failed[run.label] = len(failed_records(run))
        jobs += [(run.label, r) for r in failed_records(run, max_failed)]

    async def one(position: int, label: str, record: EpisodeRecord) -> None:
        async with semaphore:
            analysis.add(position, await classify(config, label, record))

    await asyncio.gather(*(one(i, label, r) for i, (label, r) in enumerate(jobs)))
    return analysis
