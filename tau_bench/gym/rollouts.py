"""Batched rollouts: many whole episodes of a policy at once, on the run's backend.

Why: `TauBenchEnv` steps one conversation at a time for a learner that acts turn by
turn; RL pipelines that let the agent act by itself (a policy served behind an
OpenAI-compatible endpoint, an installed adapter) want a batch of finished episodes -
reward and trajectory - as fast as the cluster allows. `batch_rollouts` is that: the
runner on a batch of (task, trial) pairs, locally or on Ray (`backend="ray"`,
`workers`, `ray_address`; docs/scale.md), with the runner's retries, error records and
one writer. The files of the batch go to `log_dir` (a temporary directory by default,
removed when the batch returns, and kept, its path printed on stderr and added to the
exception's notes, when the batch is interrupted or fails after episodes ran).

    from tau_bench.gym.rollouts import batch_rollouts
    rollouts = batch_rollouts(env="airline", task_ids=range(50), num_trials=4,
                              agent_strategy="tool-calling", model="openai/my-policy",
                              api_base="http://vllm:8000/v1", backend="ray", workers=8)
    rewards = [r.reward for r in rollouts]
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau_bench.config import RunConfig, RunConfigError, backend_conflict, build_config
from tau_bench.records import EpisodeRecord
from tau_bench.runner import Runner, prepare_run


@dataclass(frozen=True)
class Rollout:
    """One finished episode of the batch: what a learner needs, and the full record."""

    task_id: int | str
    trial: int
    reward: float | None
    messages: list[dict[str, Any]]
    error: dict[str, Any] | None  # the record's error (kind, message...) when it failed
    record: EpisodeRecord


def _rollout(record: EpisodeRecord) -> Rollout:
    return Rollout(
        task_id=record.task_id,
        trial=record.trial,
        reward=None if record.is_error else record.reward,
        messages=list(record.messages or []),
        error=record.error,
        record=record,
    )


async def abatch_rollouts(
    *, task_ids: Iterable[int | str] | None = None, log_dir: str | None = None, **settings: Any
) -> list[Rollout]:
    """`batch_rollouts` for callers already in an event loop."""
    with _batch_dir(log_dir) as where:
        return await _run_batch(task_ids, where, settings)


async def _run_batch(
    task_ids: Iterable[int | str] | None, log_dir: str, settings: dict[str, Any]
) -> list[Rollout]:
    problem = backend_conflict(
        settings.get("backend"), settings.get("workers"), settings.get("ray_address")
    )
    if problem is not None:  # `backend="local"` is a choice: not overridden by `workers`
        raise RunConfigError(problem)
    data = {"quiet": True, "log_dir": log_dir, **settings}
    if task_ids is not None:
        data["task_ids"] = list(task_ids)
    config: RunConfig = build_config(data)
    outcome = await Runner(prepare_run(config)).run()
    return [_rollout(r) for r in outcome.records]


@contextlib.contextmanager
def _batch_dir(log_dir: str | None) -> Iterator[str]:
    """`log_dir`, or a temporary directory removed when the batch returns (see `_keep`
    for one that does not)."""
    if log_dir:
        yield log_dir
        return
    tmp = tempfile.mkdtemp(prefix="tau-rollouts-")
    try:
        yield tmp
    except BaseException as exc:
        _keep(Path(tmp), exc)
        raise
    shutil.rmtree(tmp, ignore_errors=True)


def _keep(tmp: Path, exc: BaseException) -> None:
    """A batch without `log_dir` that stopped (Ctrl-C, an error): its temporary directory
    is kept once the run opened its log there, and named on stderr and in the exception's
    notes, so no finished episode is lost; one where nothing ran is removed."""
    logs = sorted(tmp.glob("*.jsonl"))
    if not logs:
        shutil.rmtree(tmp, ignore_errors=True)
        return
    note = (
        f"the batch's finished episodes are kept in {tmp} "
        f"(continue the batch with the same settings and resume={str(logs[0])!r})"
    )
    exc.add_note(note)
    print(f"warning: {note}", file=sys.stderr, flush=True)


def batch_rollouts(
    *, task_ids: Iterable[int | str] | None = None, log_dir: str | None = None, **settings: Any
) -> list[Rollout]:
    """Run every (task, trial) of a batch and return its rollouts in task order per trial.

    `settings` are `RunConfig` fields (`env`, `agent_strategy`, `model`, `api_base`,
    `num_trials`, `max_concurrency`, `backend`, `workers`, `ray_address`, `llm_path`...);
    a bad one is a `RunConfigError` naming it. An episode that failed is a rollout with
    `error` set and no reward."""
    # The directory is handled out here, not inside the coroutine: on Ctrl-C `asyncio.run`
    # cancels the coroutine and raises KeyboardInterrupt, which gets the note naming it.
    with _batch_dir(log_dir) as where:
        return asyncio.run(_run_batch(task_ids, where, settings))
