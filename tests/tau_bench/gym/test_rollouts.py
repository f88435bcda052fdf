"""Batched rollouts: a batch of whole episodes on the run's backend (local or Ray)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tau_bench.config import RunConfigError
from tau_bench.gym.rollouts import batch_rollouts
from tau_bench.runner import Runner
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


def test_an_explicit_local_backend_is_not_overridden_by_workers(tmp_path: Path) -> None:
    """`backend="local"` with `workers=2` started a Ray; it is now refused, as `tau run`
    refuses `--backend local --workers 2`, before anything runs or is written."""
    for more in ({"workers": 2}, {"ray_address": "127.0.0.1:6379"}):
        with pytest.raises(RunConfigError, match="backend local runs episodes in this process"):
            batch_rollouts(task_ids=[0], backend="local", log_dir=str(tmp_path), **more, **BATCH)
    assert list(tmp_path.iterdir()) == []


def _kept_dir(text: str) -> Path:
    match = re.search(r"finished episodes are kept in (\S+) ", text)
    assert match, text
    return Path(match.group(1))


def _logged_keys(kept: Path) -> list[tuple[int, int]]:
    (log,) = kept.glob("*.jsonl")
    lines = [json.loads(line) for line in log.read_text().splitlines()[1:]]  # after the header
    return [(r["task_id"], r["trial"]) for r in lines if "task_id" in r]


def test_a_batch_that_fails_keeps_its_temporary_directory_and_names_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    original = Runner._episode
    started: list[tuple[int, int]] = []

    async def episode(self: Runner, provider: Any, key: Any) -> Any:
        started.append(key)
        if len(started) > 1:
            raise RuntimeError("the cluster went away")
        return await original(self, provider, key)

    monkeypatch.setattr(Runner, "_episode", episode)
    with pytest.raises(RuntimeError, match="went away") as raised:
        batch_rollouts(task_ids=[0, 1], **{**BATCH, "max_concurrency": 1})
    notes = "\n".join(getattr(raised.value, "__notes__", []))
    kept = _kept_dir(notes)
    try:
        assert str(kept) in capsys.readouterr().err
        assert _logged_keys(kept) == [(0, 0)]  # the finished episode is on disk
        assert f"resume='{next(kept.glob('*.jsonl'))}'" in notes
    finally:
        shutil.rmtree(kept, ignore_errors=True)


def test_a_batch_that_succeeds_or_never_starts_leaves_no_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert len(batch_rollouts(task_ids=[0], **{**BATCH, "num_trials": 1})) == 1
    with pytest.raises(RunConfigError):
        batch_rollouts(task_ids=[0], backend="spark", **BATCH)
    assert list(tmp_path.iterdir()) == []


CTRL_C_CHILD = """
import asyncio, sys
from tau_bench.gym.rollouts import batch_rollouts
from tau_bench.runner import Runner

original = Runner._episode
count = 0

async def episode(self, provider, key):
    global count
    count += 1
    if count > 1:  # the first episode is done: say so, then wait for Ctrl-C
        print("ready", flush=True)
        await asyncio.Event().wait()
    return await original(self, provider, key)

Runner._episode = episode
batch_rollouts(task_ids=[0, 1], env="airline", agent_strategy="oracle",
               user_strategy="scripted", max_concurrency=1, data_dir=sys.argv[1])
"""


def test_ctrl_c_keeps_the_finished_episodes_of_a_batch_without_log_dir() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_CHILD, str(DATA_DIR)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert "KeyboardInterrupt" in err and child.returncode != 0
    kept = _kept_dir(err)
    try:
        assert _logged_keys(kept) == [(0, 0)]
        assert any(kept.glob("*.json"))  # the results file the runner wrote on the way out
    finally:
        shutil.rmtree(kept, ignore_errors=True)
