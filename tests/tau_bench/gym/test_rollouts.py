"""Batched rollouts: a batch of whole episodes on the run's backend (local or Ray)."""

from __future__ import annotations

import pytest

from tau_bench.config import RunConfigError
from tau_bench.gym.rollouts import batch_rollouts
from tests.conftest import DATA_DIR

BATCH = dict(
    env="airline",
    agent_strategy="oracle",
    user_strategy="scripted",
    num_trials=2,
    max_concurrency=4,
    data_dir=str(DATA_DIR),
)


def test_a_batch_on_ray_gives_the_local_batch() -> None:
    local = batch_rollouts(task_ids=[0, 1, 13], **BATCH)
    on_ray = batch_rollouts(task_ids=[0, 1, 13], backend="ray", workers=2, **BATCH)
    assert [(r.task_id, r.trial) for r in local] == [
        (0, 0),
        (1, 0),
        (13, 0),
        (0, 1),
        (1, 1),
        (13, 1),
    ]
    assert [(r.task_id, r.trial, r.reward, r.error) for r in on_ray] == [
        (r.task_id, r.trial, r.reward, r.error) for r in local
    ]
    assert all(r.reward == 1.0 and r.messages for r in local)
    assert on_ray[0].messages == local[0].messages


def test_a_bad_setting_names_itself() -> None:
    with pytest.raises(RunConfigError, match="backend"):
        batch_rollouts(task_ids=[0], backend="spark", **BATCH)
