"""`tau export` with untrusted names and outputs it cannot use, as users run it (the
installed console script): names are made safe and short (and stay stable), a bad `-o`
is one line, and a failed export leaves no half folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tau_bench.analysis import mt_bench
from tau_bench.analysis.mt_bench import safe_name, write_mt_bench
from tau_bench.records import EpisodeRecord
from tests.conftest import DATA_DIR
from tests.tau_bench.analysis.conftest import Runs

TAU = Path(sys.executable).parent / "tau"
ENV = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
LONG_MODEL = "provider/" + "m" * 300
NAME_MAX = 255  # bytes in one file name (ext4, APFS, tmpfs...)


def tau(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TAU), *map(str, args)], capture_output=True, text=True, env=ENV, cwd=cwd, timeout=300
    )


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def rewritten(src: Path, dst: Path, header: Callable[[dict[str, Any]], None] | None = None) -> Path:
    lines = src.read_text().splitlines()
    head = json.loads(lines[0])
    if header is not None:
        header(head)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    return dst


def exported(folder: Path) -> list[str]:
    """The names of the files of the one export folder in `folder`."""
    (only,) = folder.iterdir()
    return sorted(p.name for p in only.iterdir())


def test_a_long_model_in_the_results_header_gives_short_stable_file_names(
    runs: Runs, tmp_path: Path
) -> None:
    log = rewritten(
        runs.oracle, tmp_path / "long.jsonl", lambda h: h["config"].update(model=LONG_MODEL)
    )
    names = []
    for out in (tmp_path / "exp1", tmp_path / "exp2"):
        proc = tau("export", log, "--format", "mt-bench", "-o", out)
        assert proc.returncode == 0, proc.stderr
        names.append(exported(out))
    assert names[0] == names[1]  # the same run exports to the same names
    assert len(names[0]) == 5 * 2 + 2  # 5 tasks x 2 trials, scores and sidecar
    assert all(len(n.encode()) < NAME_MAX for n in names[0])
    model_part = safe_name(LONG_MODEL)
    assert len(model_part) == mt_bench.MAX_NAME_CHARS and model_part.startswith("provider_mmm")
    assert f"{model_part}_scores.jsonl" in names[0]


@pytest.mark.parametrize("flag", ["--model", "--dataset"])
def test_long_model_and_dataset_flags_are_shortened(runs: Runs, tmp_path: Path, flag: str) -> None:
    out = tmp_path / "exp"
    proc = tau("export", runs.oracle, "--format", "mt-bench", "-o", out, flag, "x" * 300)
    assert proc.returncode == 0, proc.stderr
    (folder,) = out.iterdir()
    assert len(folder.name.encode()) < NAME_MAX
    assert all(len(p.name.encode()) < NAME_MAX for p in folder.iterdir())
    assert len(list(folder.iterdir())) == 12


def test_names_that_differ_only_after_the_cut_stay_apart() -> None:
    a, b = "m" * 200 + "a", "m" * 200 + "b"
    assert safe_name(a) != safe_name(b)
    assert safe_name(a) == safe_name(a) and len(safe_name(a)) == mt_bench.MAX_NAME_CHARS
    assert mt_bench.bounded("short") == "short" and safe_name("openai/gpt-4o") == "openai_gpt-4o"


@pytest.mark.parametrize("fmt", ["mt-bench", "tau2"])
@pytest.mark.parametrize("where", ["a_file", "under_a_file"])
def test_an_output_folder_that_cannot_be_one_is_refused_in_one_line(
    runs: Runs, tmp_path: Path, fmt: str, where: str
) -> None:
    target = tmp_path / "bin.jsonl"
    target.write_text("{}\n")
    out = target if where == "a_file" else target / "exp"
    line = one_error_line(tau("export", runs.oracle, "--format", fmt, "-o", out))
    assert "is a file" in line or "is not a folder" in line
    assert target.read_text() == "{}\n" and sorted(tmp_path.iterdir()) == [target]


def test_a_failed_export_leaves_no_half_folder(tmp_path: Path) -> None:
    good = EpisodeRecord(task_id=0, trial=0, reward=1.0, task={"instruction": "do"})
    # A task whose expected action cannot be written as JSON: the trajectory files are
    # written, then the scores file fails.
    broken = EpisodeRecord(
        task_id=1,
        trial=0,
        reward=0.0,
        task={"instruction": "do", "actions": [{"name": "x", "kwargs": {"at": object()}}]},
    )
    with pytest.raises(TypeError):
        write_mt_bench([good, broken], tmp_path / "exp", "airline", "model")
    assert list((tmp_path / "exp").iterdir()) == []


def test_a_lone_surrogate_in_a_results_file_is_exported_as_its_json_escape(
    runs: Runs, tmp_path: Path
) -> None:
    lines = runs.oracle.read_text().splitlines()
    episode = json.loads(lines[1])
    episode["messages"][-1]["content"] = "bad \ud800 char"
    log = tmp_path / "surrogate.jsonl"
    log.write_text("\n".join([lines[0], json.dumps(episode), *lines[2:]]) + "\n")
    out = tmp_path / "exp"
    proc = tau("export", log, "--format", "mt-bench", "-o", out)
    assert proc.returncode == 0, proc.stderr
    (folder,) = out.iterdir()
    contents = [
        json.loads(line)["content"]
        for path in folder.glob("*_trajectory.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    assert "bad \ud800 char" in contents


def test_tau2_export_of_a_run_with_a_long_name(tmp_path: Path) -> None:
    from tests.tau_bench.tau3.tau3_runs import oracle_run

    log = oracle_run(tmp_path / "runs", "tau3/airline", "5")
    long_log = rewritten(log, tmp_path / "long.jsonl", lambda h: h.update(run_name="R" * 300))
    names = []
    for out in (tmp_path / "t2a", tmp_path / "t2b"):
        proc = tau("export", long_log, "--format", "tau2", "-o", out)
        assert proc.returncode == 0, proc.stderr
        (path,) = out.iterdir()
        assert path.name.endswith(".airline.json") and len(path.name.encode()) < NAME_MAX
        assert json.loads(path.read_text())["simulations"]
        names.append(path.name)
    assert names[0] == names[1] and names[0].startswith("RRRR")
