"""The MT-bench export: folder layout, file names, chat lines, scores."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from tau_bench.analysis.loading import load_run
from tau_bench.analysis.mt_bench import action_text, safe_name, write_mt_bench
from tau_bench.records import EpisodeRecord
from tests.tau_bench.analysis.conftest import HISTORICAL, Runs

WHEN = datetime(2025, 3, 4, 5, 6, 7)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_layout_and_scores_for_a_run(runs: Runs, tmp_path: Path) -> None:
    run = load_run(runs.sloppy)
    folder = write_mt_bench(run.records, tmp_path, "airline", "openai/gpt-4o", when=WHEN)
    assert folder == tmp_path / "airline_20250304_050607"
    names = sorted(p.name for p in folder.iterdir())
    expected = {f"openai_gpt-4o_task{t}_trajectory.jsonl" for t in (0, 1, 2, 3, 13)}
    expected |= {f"openai_gpt-4o_task{t}_trial1_trajectory.jsonl" for t in (0, 1, 2, 3, 13)}
    assert set(names) == expected | {
        "openai_gpt-4o_scores.jsonl",
        "openai_gpt-4o_scores.extra.jsonl",
    }

    scores = _lines(folder / "openai_gpt-4o_scores.jsonl")
    extras = _lines(folder / "openai_gpt-4o_scores.extra.jsonl")
    assert [s["task-id"] for s in scores][:3] == ["task-0", "task-0", "task-1"]
    assert [(e["task-id"], e["trial"]) for e in extras][:3] == [
        ("task-0", 0),
        ("task-0", 1),
        ("task-1", 0),
    ]
    first = scores[0]
    assert list(first) == ["task-id", "prompt", "result", "truth", "score", "duration"]
    assert first["prompt"].startswith("Your user id is mia_li_3668")
    assert first["score"] == 0.0 and first["result"] == ""  # the sloppy agent skipped it
    assert first["truth"].startswith('book_reservation({"user_id": "mia_li_3668", ')
    second = scores[1]
    assert second["score"] == 1.0 and second["result"] == second["truth"]
    assert isinstance(second["duration"], float)

    chat = _lines(folder / "openai_gpt-4o_task0_trial1_trajectory.jsonl")
    assert [m["role"] for m in chat[:3]] == ["system", "user", "assistant"]
    assert all(set(m) == {"role", "content"} for m in chat)
    assert chat[2]["content"].startswith("book_reservation({")
    assert chat[3]["role"] == "tool" and '"reservation_id": "HATHAT"' in chat[3]["content"]


def test_historical_results_and_a_second_export(tmp_path: Path) -> None:
    run = load_run(HISTORICAL)
    a = write_mt_bench(run.records, tmp_path, "airline", "gpt-4o", when=WHEN)
    b = write_mt_bench(run.records[:1], tmp_path, "airline", "gpt-4o", when=WHEN)
    assert b.name == a.name + "_2"  # never overwrites
    assert len(_lines(a / "gpt-4o_scores.jsonl")) == 200
    call = json.loads((a / "gpt-4o_task0_trajectory.jsonl").read_text().splitlines()[6])
    assert call == {"role": "assistant", "content": 'get_user_details({"user_id": "mia_li_3668"})'}


def test_files_are_byte_exact(tmp_path: Path) -> None:
    """The contract, byte for byte: hand-written rows, not rows built by the code."""
    passed = EpisodeRecord(
        task_id=1,
        trial=0,
        reward=1.0,
        duration=2.5,
        task={
            "instruction": "Cancel reservation ABC.",
            "actions": [
                {"name": "get_reservation_details", "kwargs": {"reservation_id": "ABC"}},
                {"name": "cancel_reservation", "kwargs": {"reservation_id": "ABC"}},
                {"name": "respond", "kwargs": {"content": "done"}},
            ],
        },
        messages=[
            {"role": "system", "content": "policy"},
            {"role": "user", "content": "Cancel ABC, é."},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {
                        "id": "1",
                        "function": {
                            "name": "get_reservation_details",
                            "arguments": '{"reservation_id": "ABC"}',
                        },
                    }
                ],
            },
            {"role": "tool", "name": "get_reservation_details", "content": "{}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "2",
                        "function": {
                            "name": "cancel_reservation",
                            "arguments": {"reservation_id": "ABC"},
                        },
                    }
                ],
            },
            {"role": "assistant", "content": "Done."},
        ],
    )
    errored = EpisodeRecord(
        task_id=7,
        trial=0,
        reward=None,
        duration=0.25,
        error={"source": "agent", "kind": "timeout", "message": "no answer in 60s"},
        task={"instruction": "do", "actions": [{"name": "respond", "kwargs": {"content": "x"}}]},
    )
    folder = write_mt_bench([errored, passed], tmp_path, "airline", "openai/gpt-4o", when=WHEN)
    assert (folder / "openai_gpt-4o_scores.jsonl").read_bytes() == (
        b'{"task-id": "task-1", "prompt": "Cancel reservation ABC.", '
        b'"result": "get_reservation_details({\\"reservation_id\\": \\"ABC\\"}),'
        b'cancel_reservation({\\"reservation_id\\": \\"ABC\\"})", '
        b'"truth": "get_reservation_details({\\"reservation_id\\": \\"ABC\\"}),'
        b'cancel_reservation({\\"reservation_id\\": \\"ABC\\"})", '
        b'"score": 1.0, "duration": 2.5}\n'
        b'{"task-id": "task-7", "prompt": "do", "result": "", "truth": "", '
        b'"score": null, "duration": 0.25}\n'
    )
    assert (folder / "openai_gpt-4o_task1_trajectory.jsonl").read_bytes() == (
        '{"role": "system", "content": "policy"}\n'
        '{"role": "user", "content": "Cancel ABC, é."}\n'
        '{"role": "assistant", "content": "Checking.\\nget_reservation_details('
        '{\\"reservation_id\\": \\"ABC\\"})"}\n'
        '{"role": "tool", "content": "{}"}\n'
        '{"role": "assistant", "content": "cancel_reservation({\\"reservation_id\\": '
        '\\"ABC\\"})"}\n'
        '{"role": "assistant", "content": "Done."}\n'
    ).encode()
    assert (folder / "openai_gpt-4o_task7_trajectory.jsonl").read_bytes() == b""
    assert (folder / "openai_gpt-4o_scores.extra.jsonl").read_bytes() == (
        b'{"task-id": "task-1", "trial": 0, "task": 1, "error": null}\n'
        b'{"task-id": "task-7", "trial": 0, "task": 7, "error": {"source": "agent", '
        b'"kind": "timeout", "message": "no answer in 60s"}}\n'
    )


def test_names() -> None:
    assert safe_name("openai/gpt-4o") == "openai_gpt-4o"
    assert safe_name("vertex_ai/gemini-2.5 pro:latest") == "vertex_ai_gemini-2.5_pro_latest"
    assert safe_name("../..") == "model"
    assert action_text("f", '{"a": 1}') == 'f({"a": 1})'
    assert action_text("f", "not json") == "f(not json)"
    assert action_text("f", "") == "f({})"
