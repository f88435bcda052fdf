"""`write_json_atomic` (every results-derived JSON: analyses, rescored files, summaries):
a failed write leaves nothing next to its target, and text JSON allows is written; and
`tau rescore -o` that could not be written is refused before the replay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tau_bench.results as results_module
from tau_bench.results import write_json_atomic
from tests.conftest import DATA_DIR
from tests.tau_bench.analysis.conftest import Runs

TAU = Path(sys.executable).parent / "tau"


def test_a_target_that_is_a_folder_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "res"
    target.mkdir()
    with pytest.raises(IsADirectoryError):
        write_json_atomic(target, {"a": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]
    assert list(target.iterdir()) == []


def test_a_failure_while_encoding_leaves_the_old_file_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injected into the encoder (which no longer fails on any data: see below)."""
    target = tmp_path / "out.json"
    target.write_text('{"old": true}\n')

    def broken(value: object, **options: object) -> str:
        raise ValueError("encoder failed")

    monkeypatch.setattr(results_module, "strict_json", broken)
    with pytest.raises(ValueError, match="encoder failed"):
        write_json_atomic(target, {"z": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
    assert json.loads(target.read_text()) == {"old": True}


def test_data_that_contains_itself_is_written_as_strict_json(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    write_json_atomic(target, {"z": _Circular()})
    assert json.loads(target.read_text()) == {"z": {"self": "<a value that contains itself>"}}


class _Circular(dict):  # type: ignore[type-arg]
    """A mapping that contains itself: `json.dumps` alone refuses it with ValueError."""

    def __init__(self) -> None:
        super().__init__()
        self["self"] = self


def test_a_lone_surrogate_is_written_as_its_json_escape(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    write_json_atomic(target, {"description": "bad \ud800 char"})
    assert json.loads(target.read_text(encoding="utf-8")) == {"description": "bad \ud800 char"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


@pytest.mark.parametrize("where", ["folder", "under_a_file"])
def test_rescore_refuses_an_output_it_cannot_write_in_one_line(
    runs: Runs, tmp_path: Path, where: str
) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "file.jsonl").write_text("{}\n")
    out = tmp_path / "folder" if where == "folder" else tmp_path / "file.jsonl" / "x.jsonl"
    proc = subprocess.run(
        [str(TAU), "rescore", str(runs.oracle), "-o", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "TAU_BENCH_DATA": str(DATA_DIR)},
        timeout=300,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: -o ") and "folder" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.jsonl", "folder"]
