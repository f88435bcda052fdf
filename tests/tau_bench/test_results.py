"""Records, the append-only log, and the original τ-bench results format."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest

from tau_bench.records import EpisodeRecord
from tau_bench.results import run_file_stem, tau_bench_entry, tau_bench_results, write_json_atomic
from tau_bench.results_log import LogFileError, ResultsLog, read_log
from tests.conftest import DATA_DIR

HISTORICAL = DATA_DIR / "historical_trajectories" / "gpt-4o-airline.json"


def _record(task_id: int = 3, trial: int = 1, **kw) -> EpisodeRecord:
    base = dict(
        reward=1.0,
        reward_info={
            "reward": 1.0,
            "info": {"r_actions": 1.0, "gt_data_hash": "abc"},
            "actions": [{"name": "get_user_details", "kwargs": {"user_id": "u"}}],
            "r_actions": 1.0,
            "r_outputs": None,
            "outputs": {},
            "data_hash": "abc",
            "gt_data_hash": "abc",
            "db_diff": [],
        },
        task={"user_id": "u", "instruction": "do it", "actions": [], "outputs": []},
        messages=[
            {"role": "system", "content": "policy"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "bye"},
        ],
        turns=[{"role": "agent", "latency": 0.5}],
        stop_reason="user_stop",
        agent_usage={"cost": 0.25, "prompt_tokens": 1, "completion_tokens": 1, "calls": 1},
        user_usage={"cost": 0.125, "prompt_tokens": 1, "completion_tokens": 1, "calls": 1},
    )
    base.update(kw)
    return EpisodeRecord(task_id=task_id, trial=trial, **base)  # type: ignore[arg-type]


def test_entry_has_the_historical_shape():
    historical = json.loads(HISTORICAL.read_text())[0]
    ours = tau_bench_entry(_record())
    assert list(ours) == list(historical)  # task_id, reward, info, traj, trial (same order)
    assert set(historical["info"]) <= set(ours["info"])
    assert set(historical["info"]["reward_info"]) <= set(ours["info"]["reward_info"])
    for key in historical:
        assert type(ours[key]) is type(historical[key]), key
    assert ours["info"]["user_cost"] == 0.125 and ours["info"]["agent_cost"] == 0.25
    assert ours["info"]["source"] == "user"
    assert ours["traj"][1] == {"role": "user", "content": "hi"}


def test_source_is_the_terminate_tool():
    messages = [
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "tool_call_id": "1", "name": "transfer_to_human_agents", "content": "ok"},
    ]
    entry = tau_bench_entry(_record(messages=messages, stop_reason="terminate_tool"))
    assert entry["info"]["source"] == "transfer_to_human_agents"


def test_errored_episodes_stay_out_of_the_results_list():
    good = _record(task_id=0)
    bad = _record(task_id=1, reward=None, reward_info=None, error={"kind": "x", "message": "m"})
    assert [e["task_id"] for e in tau_bench_results([good, bad])] == [0]


def test_non_fatal_problems_are_listed():
    entry = tau_bench_entry(_record(warnings=["adapter close failed: X"], dropped_tool_calls=2))
    assert entry["info"]["errors"][0] == "adapter close failed: X"
    assert "2 tool call(s) dropped" in entry["info"]["errors"][1]


def test_file_stem_like_the_original():
    stem = run_file_stem(
        agent_strategy="tool-calling",
        model="openai/gpt-4o",
        temperature=0.0,
        start_index=0,
        end_index=50,
        user_model="gpt-4o",
        user_strategy="llm",
        when=datetime(2025, 3, 4, 5, 6, 7),
    )
    assert stem == "tool-calling-gpt-4o-0.0_range_0-50_user-gpt-4o-llm_0304050607"
    assert re.fullmatch(r"[\w.\-]+", stem)


def test_record_roundtrip():
    r = _record()
    assert EpisodeRecord.from_dict(json.loads(json.dumps(r.to_dict()))) == r


async def test_log_roundtrip_latest_record_wins(tmp_path):
    path = tmp_path / "run.jsonl"
    log = ResultsLog.create(path, {"run_name": "run", "config": {"env": "airline"}})
    log.append(_record(task_id=0, trial=0, reward=None, error={"kind": "x", "message": "m"}))
    log.append(_record(task_id=1, trial=0))
    log.append(_record(task_id=0, trial=0, reward=1.0))
    await log.aclose()
    contents = read_log(path)
    assert contents.header["run_name"] == "run"
    assert contents.bad_lines == 0
    assert sorted(contents.records) == [(0, 0), (1, 0)]
    assert contents.records[(0, 0)].reward == 1.0 and not contents.records[(0, 0)].is_error
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["type"] == "header" and len(lines) == 4


async def test_partial_last_line_is_ignored_then_truncated_on_reopen(tmp_path):
    path = tmp_path / "run.jsonl"
    log = ResultsLog.create(path, {"run_name": "run"})
    log.append(_record(task_id=0, trial=0))
    await log.aclose()
    with path.open("ab") as fh:
        fh.write(b'{"type": "episode", "task_id": 1, "tri')  # killed mid-write
    contents = read_log(path)
    assert list(contents.records) == [(0, 0)] and contents.bad_lines == 1
    log = ResultsLog.reopen(path, {"at": "now"})
    log.append(_record(task_id=1, trial=0))
    await log.aclose()
    contents = read_log(path)
    assert sorted(contents.records) == [(0, 0), (1, 0)] and contents.bad_lines == 0


async def test_a_whole_last_line_without_its_newline_is_kept_on_reopen(tmp_path):
    """`read_log` counts a last line that is a whole record (an editor or a copy dropped
    its newline): reopening must not then cut it off, which lost that episode."""
    path = tmp_path / "run.jsonl"
    log = ResultsLog.create(path, {"run_name": "run"})
    log.append(_record(task_id=0, trial=0))
    log.append(_record(task_id=1, trial=0))
    await log.aclose()
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    assert sorted(read_log(path).records) == [(0, 0), (1, 0)]
    log = ResultsLog.reopen(path, {"at": "now"})
    log.append(_record(task_id=2, trial=0))
    await log.aclose()
    contents = read_log(path)
    assert sorted(contents.records) == [(0, 0), (1, 0), (2, 0)] and contents.bad_lines == 0


async def test_a_log_being_written_cannot_be_reopened_by_another_writer(tmp_path):
    """Two resumes of one log at once would both run its missing episodes: the second
    is refused while the first holds the log, and may go once it is closed."""
    path = tmp_path / "run.jsonl"
    first = ResultsLog.create(path, {"run_name": "run"})
    with pytest.raises(LogFileError, match="being written by another tau run"):
        ResultsLog.reopen(path, {"at": "now"})
    first.append(_record(task_id=0, trial=0))
    await first.aclose()
    second = ResultsLog.reopen(path, {"at": "later"})
    await second.aclose()
    assert list(read_log(path).records) == [(0, 0)]


async def test_a_cancelled_flush_loses_no_record(tmp_path):
    """Ctrl-C (or a crash) cancels every task, the log's flusher too: a batch it had
    handed to a thread that had not started yet must still reach the file, once."""
    path = tmp_path / "run.jsonl"
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(max_workers=1)
    loop.set_default_executor(pool)
    release = threading.Event()
    blocker = loop.run_in_executor(None, release.wait, 30)  # the pool's one thread, busy
    log = ResultsLog.create(path, {"run_name": "run"})
    log.append(_record(task_id=0, trial=0))
    log.append(_record(task_id=1, trial=0))
    flusher = log._flusher
    assert flusher is not None
    await asyncio.sleep(0)  # one loop step: the flusher queues its write behind the blocker
    flusher.cancel()
    await asyncio.gather(flusher, return_exceptions=True)  # cancelled before it started
    release.set()
    await blocker
    log.append(_record(task_id=2, trial=0))
    await log.aclose()
    lines = path.read_text().splitlines()
    assert sorted(read_log(path).records) == [(0, 0), (1, 0), (2, 0)]
    assert len(lines) == 4 and log.written == 3


def test_create_never_overwrites(tmp_path):
    path = tmp_path / "run.jsonl"
    ResultsLog.create(path, {})._fh.close()
    with pytest.raises(FileExistsError):
        ResultsLog.create(path, {})


def test_not_a_log(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"hello": 1}\n')
    with pytest.raises(LogFileError):
        read_log(path)
    with pytest.raises(LogFileError):
        read_log(tmp_path / "missing.jsonl")


def test_write_json_atomic(tmp_path):
    path = tmp_path / "sub" / "out.json"
    write_json_atomic(path, [{"a": 1}])
    assert json.loads(path.read_text()) == [{"a": 1}]
    assert not list(path.parent.glob("*.tmp"))
