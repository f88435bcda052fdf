"""The bench helper runs, scores every task 1.0, and a live episode stays under 1 MB."""

from __future__ import annotations

from pathlib import Path

import pytest

from tau_bench.tau3.domains.telecom.bench import main, run_bench


def test_small_split_bench(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_bench(root, "small")
    assert (result.tasks, result.perfect) == (20, 20)
    assert 0 < result.episode_bytes < 1024 * 1024
    assert result.speedup is None  # the original was measured on `full` only
    assert main([str(root), "small"]) == 0
    table = capsys.readouterr().out
    assert "tasks of small (reward 1.0)  20 (20)" in table
    assert "memory per live episode" in table


def test_bad_root_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
