"""The collector's run pace: held while runs run, the caller's thresholds after."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tau_bench.config import RunConfig
from tau_bench.runner import Runner, prepare_run
from tau_bench.runner.collector import YOUNG_THRESHOLD, run_pace
from tests.conftest import DATA_DIR


@pytest.fixture(autouse=True)
def default_pace() -> Iterator[tuple[int, ...]]:
    """CPython's default thresholds for each test, the session's own after it."""
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*saved)


def test_the_pace_is_held_inside_and_given_back_after() -> None:
    with run_pace():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_overlapping_runs_give_it_back_when_the_last_one_ends() -> None:
    first, second = run_pace(), run_pace()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first run ends while the second still runs
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD
    second.__exit__(None, None, None)
    assert gc.get_threshold() == (700, 10, 10)


def test_a_caller_s_slower_pace_is_kept() -> None:
    gc.set_threshold(10 * YOUNG_THRESHOLD, 5, 5)
    with run_pace():
        assert gc.get_threshold() == (10 * YOUNG_THRESHOLD, 5, 5)
    assert gc.get_threshold() == (10 * YOUNG_THRESHOLD, 5, 5)


def test_an_error_in_the_block_still_gives_it_back() -> None:
    with pytest.raises(RuntimeError), run_pace():
        raise RuntimeError("an episode loop failed")
    assert gc.get_threshold() == (700, 10, 10)


async def test_a_run_s_episodes_run_at_the_pace(tmp_path: Path) -> None:
    seen: list[int] = []

    class Watch:
        def started(self, total: int, done: list[Any]) -> None:
            pass

        def episode_done(self, record: Any) -> None:
            seen.append(gc.get_threshold()[0])

        def finished(self) -> None:
            pass

    config = RunConfig(
        env="airline",
        agent_strategy="oracle",
        user_strategy="scripted",
        task_ids=[13, 0, 1],
        log_dir=str(tmp_path),
        data_dir=str(DATA_DIR),
        run_name="pace",
        quiet=True,
    )
    outcome = await Runner(prepare_run(config), Watch()).run()
    assert len(outcome.records) == 3 and seen == [YOUNG_THRESHOLD] * 3
    assert gc.get_threshold() == (700, 10, 10)
