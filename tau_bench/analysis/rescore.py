"""`tau rescore`: replay recorded trajectories on today's domain and recompute rewards.

Why: a reward is only as right as the task and tools it was computed with. After a task
fix, or for results written by another harness (τ-bench's published trajectories), the
recorded actions are re-executed on a fresh `Env` per trajectory and scored again.

What is replayed, in message order: for each assistant message, its text (if any) as a
reply to the user (`env.respond`), then **every** tool call it carries, in order (name
and JSON arguments from the OpenAI-format `tool_calls`). The original τ-bench executed
only the first tool call of a message (its agents produced one); a trajectory with
several calls per message therefore replays more actions than the original ran, and
the count is reported. Replay stops after a terminate tool, as an episode does.
Trajectories of the original's text agents (act/react: no `tool_calls`, actions written
as `Action: {"name": ..., "arguments": ...}`) are parsed the way the original parsed them.
Recorded observations are compared with the new ones; differences are counted (a sign
that a tool's behaviour changed).

Each record is replayed on its own domain: its `domain` field, else its task id's
namespace (`retail/12`, multi-domain runs), else the run's single domain. A task is
found by its index in that domain's split.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tau_bench.analysis.loading import LOG, Run
from tau_bench.analysis.shown import decode_arguments, masked_value
from tau_bench.domains import Domain
from tau_bench.env import Env
from tau_bench.metrics import domain_of, summarize
from tau_bench.records import EpisodeRecord, now_iso
from tau_bench.results import write_json_atomic
from tau_bench.results_log import encode_record, strict_json
from tau_bench.scoring import RewardResult
from tau_bench.task_ids import TaskId, task_index
from tau_bench.tasks import RESPOND_ACTION, Task


class RescoreError(ValueError):
    """The run cannot be rescored on this domain; the message says why."""


@dataclass
class ReplayStats:
    tool_calls: int = 0
    replies: int = 0
    multi_call_messages: int = 0
    observation_changes: int = 0
    text_actions: bool = False


@dataclass
class RescoredEpisode:
    task_id: TaskId
    trial: int
    old_reward: float | None
    new_reward: float | None = None
    result: RewardResult | None = None
    stats: ReplayStats = field(default_factory=ReplayStats)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None
    old_info: dict[str, Any] | None = None

    @property
    def changed(self) -> bool:
        if self.skipped is not None:
            return False
        return (self.old_reward or 0.0) != (self.new_reward or 0.0)

    def why(self) -> str:
        """Which part of the reward moved (database, outputs)."""
        if self.result is None:
            return ""
        if not self.old_info:
            return "the original never scored it (unfinished)"
        old = self.old_info
        parts = []
        old_actions = old.get("r_actions", (old.get("info") or {}).get("r_actions"))
        if old_actions is not None and old_actions != self.result.r_actions:
            parts.append(f"database {'now matches' if self.result.r_actions else 'now differs'}")
        old_outputs = old.get("r_outputs", (old.get("info") or {}).get("r_outputs"))
        if self.result.r_outputs is not None and old_outputs != self.result.r_outputs:
            parts.append(f"outputs {'now found' if self.result.r_outputs else 'now missing'}")
        return "; ".join(parts)


@dataclass
class RescoreResult:
    run: Run
    env: str
    split: str
    episodes: list[RescoredEpisode]
    records: list[EpisodeRecord]

    @property
    def changed(self) -> list[RescoredEpisode]:
        return [e for e in self.episodes if e.changed]

    @property
    def multi_call_messages(self) -> int:
        return sum(e.stats.multi_call_messages for e in self.episodes)

    def summary(self) -> dict[str, Any]:
        before = summarize(self.run.records, self.run.num_trials)
        after = summarize(self.records, self.run.num_trials)
        changed = self.changed
        return {
            "source": str(self.run.path),
            "env": self.env,
            "task_split": self.split,
            "episodes": len(self.episodes),
            "rescored": sum(1 for e in self.episodes if e.skipped is None),
            "skipped": sum(1 for e in self.episodes if e.skipped is not None),
            "changed": len(changed),
            "now_passing": sum(1 for e in changed if (e.new_reward or 0) > (e.old_reward or 0)),
            "now_failing": sum(1 for e in changed if (e.new_reward or 0) < (e.old_reward or 0)),
            "multi_call_messages": self.multi_call_messages,
            "observation_changes": sum(e.stats.observation_changes for e in self.episodes),
            "avg_reward": {"before": before["avg_reward"], "after": after["avg_reward"]},
            "pass_hat_k": {"before": before["pass_hat_k"], "after": after["pass_hat_k"]},
            "changes": [
                {
                    "task_id": e.task_id,
                    "trial": e.trial,
                    "old_reward": e.old_reward,
                    "new_reward": e.new_reward,
                    "why": e.why(),
                    "notes": e.notes,
                }
                for e in changed
            ],
        }


# -- replay ----------------------------------------------------------------------------


def _arguments(raw: Any) -> Any:
    """JSON-string arguments decoded (with a bound: `shown.decode_arguments`); anything
    undecodable, nested too deep included, goes to the env as is (the env answers it with
    an error observation, as it would have live)."""
    if raw is None:
        return {}
    return decode_arguments(raw)[0]


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def _uses_text_actions(messages: list[dict[str, Any]]) -> bool:
    """A trajectory of the original's act/react agents: no tool calls, `Action:` text."""
    assistant = [m for m in messages if m.get("role") == "assistant"]
    return (
        bool(assistant)
        and not any(m.get("tool_calls") for m in assistant)
        and any("Action:" in _text(m.get("content")) for m in assistant)
    )


def _text_action(content: str) -> tuple[str, Any]:
    """The original's parsing of an act/react message: the JSON after the last
    `Action:`; anything unparsable is a reply with that text."""
    action = content.split("Action:")[-1].strip()
    parsed, ok = decode_arguments(action)  # bounded: nesting, long integers
    if ok and isinstance(parsed, dict) and "name" in parsed:
        return str(parsed["name"]), parsed.get("arguments", {})
    return RESPOND_ACTION, {"content": action}


def _recorded_observations(messages: list[dict[str, Any]], at: int) -> list[dict[str, Any]]:
    """The tool messages that answered the assistant message at index `at`."""
    block = []
    for message in messages[at + 1 :]:
        if message.get("role") != "tool":
            break
        block.append(message)
    return block


def _recorded_for(call: dict[str, Any], position: int, block: list[dict[str, Any]]) -> str | None:
    """The recorded observation of a call: by id within its block, else by position."""
    for message in block:
        if message.get("tool_call_id") and message.get("tool_call_id") == call.get("id"):
            return _text(message.get("content"))
    return _text(block[position].get("content")) if position < len(block) else None


def replay(env: Env, messages: list[dict[str, Any]]) -> ReplayStats:
    """Re-execute the agent's side of `messages` on `env` (see the module docstring)."""
    stats = ReplayStats(text_actions=_uses_text_actions(messages))
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        content = _text(message.get("content"))
        if stats.text_actions:
            name, args = _text_action(content)
            if name == RESPOND_ACTION:
                env.respond(str((args or {}).get("content", "")))
                stats.replies += 1
                continue
            env.execute(name, args)
            stats.tool_calls += 1
            if env.is_terminate(name):
                return stats
            continue
        calls = message.get("tool_calls") or []
        if content:
            env.respond(content)
            stats.replies += 1
        if len(calls) > 1:
            stats.multi_call_messages += 1
        block = _recorded_observations(messages, index) if calls else []
        for position, call in enumerate(calls):
            fn = call.get("function") or {}
            name = str(fn.get("name", ""))
            observation = env.execute(name, _arguments(fn.get("arguments"))).content
            stats.tool_calls += 1
            old = _recorded_for(call, position, block)
            if old is not None and old != observation:
                stats.observation_changes += 1
            if env.is_terminate(name):
                return stats
    return stats


# -- tasks -----------------------------------------------------------------------------


def _recorded_task(record: EpisodeRecord) -> Task | None:
    if not record.task:
        return None
    try:
        return Task.model_validate(record.task)
    except ValidationError:
        return None


def _task_differences(recorded: dict[str, Any], current: Task) -> list[str]:
    if not recorded:
        return []
    notes = []
    if recorded.get("user_id") not in (None, current.user_id):
        notes.append(
            f"recorded task is for user {recorded.get('user_id')}, the current one for "
            f"{current.user_id} (wrong split?)"
        )
        return notes
    now = current.model_dump(mode="json")
    for key in ("instruction", "actions", "outputs"):
        if key in recorded and recorded[key] != now.get(key):
            notes.append(f"task {key} changed since the run")
    return notes


def record_domain(record: EpisodeRecord, run: Run) -> str | None:
    """The domain a record was run on: its own, else its id's, else the run's only one."""
    own = domain_of(record)
    if own:
        return own
    domains = run.domains
    return domains[0] if len(domains) == 1 else None


def rescore_run(
    run: Run,
    domain: Domain | Mapping[str, Domain],
    *,
    split: str | None = None,
    recorded_tasks: bool = False,
    score_unfinished: bool = False,
) -> RescoreResult:
    """Every scored episode of `run` replayed and scored on its domain, one of `domain`
    (a domain, or domains by name: a multi-domain run needs each of its domains).

    Tasks are the current ones, by task index, in `split` (default: the run's split if
    it recorded one, else test). `recorded_tasks` - or a run made from a tasks file -
    uses the task stored in each record instead. Records of a domain not given are
    skipped; a run none of whose domains is given is refused.

    An original τ-bench entry without reward info is an episode the original never
    scored (it ended without finishing, e.g. at max steps, and got 0); it keeps its 0
    unless `score_unfinished`, which scores its final state as this harness does.
    """
    domains = {domain.name: domain} if isinstance(domain, Domain) else dict(domain)
    names = ", ".join(domains)
    if run.domains and not set(run.domains) & set(domains):
        raise RescoreError(
            f"{run.path} holds {run.env} results; they cannot be rescored on {names}"
        )
    split = split or run.task_split or "test"
    from_records = recorded_tasks or bool(run.config.get("tasks_file"))
    only = next(iter(domains)) if len(domains) == 1 else None
    episodes: list[RescoredEpisode] = []
    records: list[EpisodeRecord] = []
    for record in run.records:
        episode = RescoredEpisode(
            record.task_id, record.trial, record.reward, old_info=record.reward_info
        )
        episodes.append(episode)
        new = copy.copy(record)
        records.append(new)
        if record.is_error:
            episode.skipped = "errored episode (never scored)"
            continue
        name = record_domain(record, run) or only
        if name is None:
            episode.skipped = "its domain is unknown (name it: --env)"
            continue
        if name not in domains:
            episode.skipped = f"domain {name} not rescored (rescoring on {names})"
            continue
        if record.reward_info is None and run.source_format != LOG and not score_unfinished:
            episode.skipped = "unfinished in the original (no reward computed, scored 0)"
            continue
        if from_records:
            task = _recorded_task(record)
            if task is None:
                episode.skipped = "no usable task stored in the record"
                continue
        else:
            tasks = domains[name].tasks(split)  # loaded once per domain and split
            index = task_index(record.task_id)
            if index is None or not 0 <= index < len(tasks):
                episode.skipped = (
                    f"task {record.task_id} is not in {name} {split} ({len(tasks)} tasks)"
                )
                continue
            task = tasks[index]
            episode.notes.extend(_task_differences(record.task, task))
        env = Env(domains[name], task)
        episode.stats = replay(env, record.messages)
        if episode.stats.multi_call_messages:
            episode.notes.append(
                f"{episode.stats.multi_call_messages} message(s) with several tool calls "
                "(all replayed; the original ran only the first)"
            )
        reward = env.reward()
        episode.result = reward
        episode.new_reward = reward.reward
        new.reward = reward.reward
        new.reward_info = reward.to_dict()
        new.task = task.model_dump(mode="json")
    return RescoreResult(
        run=run, env=",".join(domains), split=split, episodes=episodes, records=records
    )


# -- output ----------------------------------------------------------------------------


def write_rescored(result: RescoreResult, out: Path) -> Path:
    """The rescored run in its input's format (a log stays a log, a τ-bench list a list,
    every key of its entries kept: the list the loader read, not the file read again).
    Secrets in it are masked (`shown.masked_value`: a results file from elsewhere was
    never masked). Written through `<out>.tmp`, which a failed write removes."""
    run = result.run
    note = {
        "from": str(run.path),
        "at": now_iso(),
        "env": result.env,
        "task_split": result.split,
        "changed": len(result.changed),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    if run.source_format == LOG:
        header = masked_value({**run.header, "rescored": note})
        tmp = out.with_name(out.name + ".tmp")
        try:
            with tmp.open("wb") as fh:
                # a lone surrogate has no UTF-8 form: its JSON escape, inside a JSON string
                fh.write(strict_json(header).encode("utf-8", "backslashreplace") + b"\n")
                for record in result.records:
                    fh.write(encode_record(_masked_record(record)))
            os.replace(tmp, out)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return out
    entries: list[Any] = []
    for entry, record, episode in zip(run.entries, result.records, result.episodes, strict=True):
        if episode.skipped is None:
            info = entry.get("info")
            entry = {
                **entry,
                "reward": record.reward,
                "info": {
                    **(info if isinstance(info, dict) else {}),
                    "reward_info": record.reward_info,
                    "task": record.task,
                    "rescored": {**note, "previous_reward": episode.old_reward},
                },
            }
        entries.append(masked_value(entry))
    write_json_atomic(out, entries)
    return out


def _masked_record(record: EpisodeRecord) -> EpisodeRecord:
    data = masked_value(record.to_dict())
    data.pop("type", None)
    return EpisodeRecord(**data)
