"""`python -m tau_bench.tau3.lineage` and `python -m tau_bench.tau3.bench` as users run
them (subprocess): a missing argument, a missing data directory or an unwritable output is
one `error: ...` (or usage) line and exit 2, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tau_bench.tau3.lineage import load_lineage
from tests.conftest import DATA_DIR


def _module(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", name, *args], capture_output=True, text=True, timeout=300
    )


def _one_line_error(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for needle in needles:
        assert needle in lines[0]


def test_lineage_missing_v1_data_is_one_line(data_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "lineage.json"
    done = _module(
        "tau_bench.tau3.lineage",
        *("--v1-data", str(tmp_path / "absent"), "--tau3-data", str(data_root), "-o", str(out)),
    )
    _one_line_error(done, "cannot read", "absent")
    assert not out.exists()


def test_lineage_unwritable_output_is_one_line(data_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "no-such-dir" / "lineage.json"
    done = _module(
        "tau_bench.tau3.lineage",
        *("--v1-data", str(DATA_DIR), "--tau3-data", str(data_root), "-o", str(out)),
    )
    _one_line_error(done, "cannot write", str(out))


def test_lineage_main_writes_the_shipped_mapping(data_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "lineage.json"
    done = _module(
        "tau_bench.tau3.lineage",
        *("--v1-data", str(DATA_DIR), "--tau3-data", str(data_root), "-o", str(out)),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text(encoding="utf-8")) == load_lineage()


def test_lineage_v1_tasks_not_an_array_is_one_line(data_root: Path, tmp_path: Path) -> None:
    for domain in ("airline", "retail"):
        (tmp_path / domain / "tasks").mkdir(parents=True)
        (tmp_path / domain / "tasks" / "test.json").write_text('{"tasks": 1}')
    done = _module(
        "tau_bench.tau3.lineage",
        *("--v1-data", str(tmp_path), "--tau3-data", str(data_root), "-o", str(tmp_path / "o")),
    )
    _one_line_error(done, "is not a JSON array of task objects")


def test_bench_without_an_argument_prints_its_usage() -> None:
    done = _module("tau_bench.tau3.bench")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == "usage: python -m tau_bench.tau3.bench DATA_DIR [DOMAIN ...]"


def test_bench_missing_data_dir_is_one_line(tmp_path: Path) -> None:
    _one_line_error(_module("tau_bench.tau3.bench", str(tmp_path / "absent")), "not found")


def test_bench_unknown_domain_is_one_line(data_root: Path) -> None:
    done = _module("tau_bench.tau3.bench", str(data_root), "\x1b[31mnope")
    _one_line_error(done, "unknown τ³ domain", "\\x1b[31mnope")
    assert "\x1b" not in done.stderr


def test_bench_one_domain_prints_its_row(data_root: Path) -> None:
    done = _module("tau_bench.tau3.bench", str(data_root), "mock")
    assert done.returncode == 0, done.stderr
    assert any(line.startswith("mock ") for line in done.stdout.splitlines())
