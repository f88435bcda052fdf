"""The log's encoder writes every record, and only lines its own readers accept: a lone
surrogate from a bot becomes U+FFFD, a non-finite number the string JSON-proto spells,
a value that holds itself a short note, never a crash of the run nor a bare NaN."""

from __future__ import annotations

import json
import math
from pathlib import Path

from tau_bench.records import EpisodeRecord
from tau_bench.results_log import ResultsLog, encode_record, read_log


def _record(**kw: object) -> EpisodeRecord:
    base: dict[str, object] = {
        "task_id": 14,
        "trial": 0,
        "reward": 1.0,
        "task": {"user_id": "u", "instruction": "do it", "actions": [], "outputs": []},
        "messages": [{"role": "assistant", "content": "ok"}],
        "stop_reason": "agent_end",
    }
    return EpisodeRecord(**{**base, **kw})  # type: ignore[arg-type]


def _strict(line: bytes) -> dict:
    """The line as a strict reader decodes it: UTF-8, and no NaN or Infinity."""

    def refuse(token: str) -> float:
        raise AssertionError(f"bare {token} in the log line")

    return json.loads(line.decode("utf-8"), parse_constant=refuse)  # type: ignore[no-any-return]


def test_a_lone_surrogate_is_written_as_the_replacement_character() -> None:
    record = _record(messages=[{"role": "assistant", "content": "hello \ud800 there \U0001f600"}])
    data = _strict(encode_record(record))
    assert data["messages"][0]["content"] == "hello \ufffd there \U0001f600"


def test_non_finite_numbers_are_spelled_as_strings_and_the_record_reads_back(
    tmp_path: Path,
) -> None:
    record = _record(
        turns=[{"role": "agent", "latency": 0.1, "extra": {"v": math.nan, "w": [-math.inf]}}],
        reward_info={"reward": 1.0, "actions": [{"name": "x", "kwargs": {"n": math.inf}}]},
    )
    data = _strict(encode_record(record))
    assert data["turns"][0]["extra"] == {"v": "NaN", "w": ["-Infinity"]}
    assert data["reward_info"]["actions"][0]["kwargs"] == {"n": "Infinity"}
    path = tmp_path / "run.jsonl"
    log = ResultsLog.create(path, {"config": {"note": "\udcff"}})
    log._write_now([encode_record(record)])
    log._fh.close()
    contents = read_log(path)
    assert contents.bad_lines == 0 and list(contents.records) == [(14, 0)]
    assert contents.header["config"] == {"note": "\ufffd"}


def test_a_value_that_holds_itself_or_odd_keys_do_not_stop_the_line() -> None:
    loop: dict[str, object] = {}
    loop["self"] = loop

    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no")

    record = _record(
        turns=[
            {
                "role": "agent",
                "latency": 0.1,
                "extra": {"loop": loop, (1, 2): "tuple key", math.nan: Unprintable()},
            }
        ]
    )
    extra = _strict(encode_record(record))["turns"][0]["extra"]
    assert extra["loop"] == {"self": "<a value that contains itself>"}
    assert extra["(1, 2)"] == "tuple key"
    assert extra["NaN"] == "<Unprintable>"


def test_the_results_and_summary_files_are_strict_json_too(tmp_path: Path) -> None:
    """`<run>.json`, `.summary.json` and the eval report (`write_json_atomic`) hold what a
    model put in its tool arguments, NaN included: spelled as strings, never bare."""
    from tau_bench.results import write_json_atomic

    def refuse(token: str) -> None:
        raise AssertionError(f"bare {token}")

    for data in ([{"kwargs": {"x": float("nan")}}], {"cost": float("-inf")}):
        write_json_atomic(tmp_path / "out.json", data)
        json.loads((tmp_path / "out.json").read_text(), parse_constant=refuse)
