"""Masking a record's secrets follows any value: one that holds itself (an adapter's
`extra` pointing back at itself) or nests thousands of levels deep is cut there by the
log writer's placeholder, the rest is masked, and the episode is recorded, not lost to a
RecursionError."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tau_bench.records import CYCLE, MAX_DEPTH, TOO_DEEP, EpisodeRecord, bounded, masked
from tau_bench.results_log import strict_json
from tests.conftest import DATA_DIR
from tests.tau_adapters.plugin_dist import adapter_plugin

SECRET = "sk-cycle-secret-42"


def _record(**fields: Any) -> EpisodeRecord:
    return EpisodeRecord(task_id=0, trial=0, reward=1.0, **fields)


def test_a_value_that_holds_itself_is_cut_and_the_rest_masked() -> None:
    extra: dict[str, Any] = {"token": SECRET, SECRET: "as a key", "list": [SECRET]}
    extra["self"] = extra
    extra["list"].append(extra["list"])
    out = masked(
        _record(messages=[{"role": "assistant", "content": SECRET, "extra": extra}]), [SECRET]
    )
    [message] = out.messages
    assert message["content"] == "***"
    assert message["extra"]["self"] == CYCLE and message["extra"]["list"] == ["***", CYCLE]
    assert message["extra"]["token"] == "***" and message["extra"]["***"] == "as a key"
    assert SECRET not in strict_json(out.to_dict())


def test_deep_nesting_is_cut_at_the_bound_and_the_rest_masked() -> None:
    deep: Any = SECRET
    for _ in range(5000):
        deep = {"k": [deep]}
    out = masked(_record(turns=[{"extra": deep}], stop_reason=f"said {SECRET}"), [SECRET])
    assert out.stop_reason == "said ***"
    text = strict_json(out.to_dict())
    assert SECRET not in text and TOO_DEEP in text


def test_the_placeholders_are_the_log_writers() -> None:
    """`strict_json` (what writes every log line) and `bounded` spell a cycle and too deep
    nesting alike, so a record reads the same whichever cut it."""
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    assert json.loads(strict_json(cyclic)) == bounded(cyclic) == [CYCLE]
    deep: Any = 0
    for _ in range(5000):  # past what json.dumps follows: strict_json cuts it too
        deep = [deep]
    cut = json.loads(strict_json(deep))
    assert cut == bounded(deep)
    for _ in range(MAX_DEPTH):
        cut = cut[0]
    assert cut == TOO_DEEP


def test_a_record_without_a_secret_or_a_cycle_is_kept_as_it_is() -> None:
    record = _record(messages=[{"role": "user", "content": "hello"}])
    assert masked(record, [SECRET]) is record
    shallow = _record(messages=[{"role": "user", "content": SECRET, "extra": {"a": (1, 2)}}])
    assert masked(shallow, [SECRET]).messages == [
        {"role": "user", "content": "***", "extra": {"a": [1, 2]}}
    ]


ADAPTER = f"""
from tau_adapters.protocol import AgentTurn
from tau_adapters.registry import SimpleProvider


class Agent:
    async def start(self, session):
        pass

    async def send(self, turn):
        extra = {{"token": "{SECRET}"}}
        extra["self"] = extra
        return AgentTurn(messages=["bye {SECRET}"], extra={{"state": extra}},
                         end_conversation=True)

    async def close(self):
        pass


class Provider(SimpleProvider):
    secrets = ["{SECRET}"]


def build(options):
    return Provider(Agent)
"""


def test_tau_run_records_an_episode_whose_extra_holds_itself(tmp_path: Path) -> None:
    (tmp_path / "plugin").mkdir()
    plugin = adapter_plugin(tmp_path / "plugin", "cyclic", ADAPTER)
    env = {**os.environ, "PYTHONPATH": str(plugin), "TAU_BENCH_DATA": str(DATA_DIR)}
    args = ["run", "--env", "airline", "--agent-strategy", "cyclic", "--user-strategy"]
    args += ["scripted", "--task-ids", "13", "--log-dir", str(tmp_path / "logs")]
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "tau"), *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    [log] = (tmp_path / "logs").glob("*.jsonl")
    text = log.read_text()
    assert SECRET not in text + proc.stdout + proc.stderr
    [episode] = [e for e in map(json.loads, text.splitlines()) if e.get("type") == "episode"]
    assert episode["error"] is None, episode["error"]
    [turn] = [t for t in episode["turns"] if t.get("extra")]
    assert turn["extra"] == {"state": {"token": "***", "self": CYCLE}}
