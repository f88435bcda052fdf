"""`tau_bench.data.files`: a data file that cannot be used is one `DataDirError` naming it;
a good one reads exactly as the standard library reads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tau_bench.data import files as files_module
from tau_bench.data.errors import DataDirError
from tau_bench.data.files import PULL_HINT, damaged, read_json, read_text, read_toml
from tests.conftest import DATA_DIR
from tests.conftest import TAU3_DATA_DIR as TAU3_DIR
from tests.tau_bench.data.mirror import mirror_except


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "No such file or directory"),
        (b'{"x":', "is not valid JSON (Expecting value"),
        (b"\xff\xfe[1]", "is not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "is not valid JSON (nested too deep)"),
        (b"[" + b"9" * 5000 + b"]", "is not valid JSON (an integer longer than 4,300 digits)"),
    ],
)
def test_read_json_names_the_file_and_the_problem(
    tmp_path: Path, content: bytes | None, problem: str
) -> None:
    path = tmp_path / "db.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(DataDirError) as caught:
        read_json(path, "do this")
    message = str(caught.value)
    assert str(path) in message and problem in message and message.endswith("do this")
    assert "\n" not in message


def test_a_directory_where_a_file_belongs(tmp_path: Path) -> None:
    with pytest.raises(DataDirError, match=r"cannot read .*: Is a directory"):
        read_text(tmp_path)


def test_text_and_toml(tmp_path: Path) -> None:
    path = tmp_path / "policy.md"
    path.write_bytes(b"ok \xff")
    with pytest.raises(DataDirError, match=r"policy.md is not UTF-8 text \(byte 3\)"):
        read_text(path)
    with pytest.raises(DataDirError, match=r"policy.md is not UTF-8 text"):
        read_toml(path)
    path.write_text("x = [\n", encoding="utf-8")
    with pytest.raises(DataDirError, match=r"policy.md is not valid TOML \("):
        read_toml(path)
    path.write_text("x = " + "9" * 5000, encoding="utf-8")
    with pytest.raises(DataDirError, match=r"not valid TOML \(an integer longer than 4,300 dig"):
        read_toml(path)
    assert "tau data pull" in str(damaged(path, "is odd"))


def test_good_files_read_as_the_standard_library_reads_them(tmp_path: Path) -> None:
    doc = {"a": [1, 2.5, None, True, "é\u2028"], "b": {"n": 12345678901234567890123}}
    path = tmp_path / "f.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    assert read_json(path) == json.loads(path.read_bytes()) == doc
    assert read_text(path) == path.read_text(encoding="utf-8")
    toml = tmp_path / "f.toml"
    toml.write_text('[device]\nstatus = "active"\nn = 3\n', encoding="utf-8")
    assert read_toml(toml) == tomllib.loads(toml.read_text(encoding="utf-8"))


def _sparse(path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no room (a hole): never to be read whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        fh.truncate(size)
    return path


@pytest.mark.parametrize("read", [read_json, read_text, read_toml])
def test_a_file_over_the_size_cap_is_refused_unread(tmp_path: Path, read: Any) -> None:
    path = _sparse(tmp_path / "users.json", files_module.MAX_FILE_SIZE + 1)
    with pytest.raises(DataDirError) as caught:
        read(path, "do this")
    message = str(caught.value)
    assert message == (
        f"{path} (more than 256 MiB) is too large: the data directory is damaged; do this"
    )


def test_the_cap_is_far_above_every_real_data_file() -> None:
    largest = max(
        p.stat().st_size
        for root in (DATA_DIR, TAU3_DIR)
        if root.is_dir()
        for p in root.rglob("*")
        if p.is_file()
    )
    assert 10 * largest < files_module.MAX_FILE_SIZE


def test_a_pipe_that_sends_more_than_the_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a regular file (no size to look at): refused once the cap is passed."""
    monkeypatch.setattr(files_module, "MAX_FILE_SIZE", 1024, raising=False)
    fifo = tmp_path / "users.json"
    os.mkfifo(fifo)

    def write() -> None:
        with fifo.open("wb") as fh:
            fh.write(b"[" + b"1," * 2000 + b"1]")

    writer = threading.Thread(target=write)
    writer.start()
    try:
        with pytest.raises(
            DataDirError, match=r"users.json \(more than 1,024 bytes\) is too large"
        ):
            read_json(fifo)
    finally:
        writer.join(timeout=60)


TAU = str(Path(sys.executable).parent / "tau")


@pytest.mark.parametrize(
    ("args", "root_var", "rel"),
    [
        (["tasks", "list", "--env", "airline"], "TAU_BENCH_DATA", "airline/db/users.json"),
        (
            ["tasks", "list", "--env", "tau3/mock"],
            "TAU3_BENCH_DATA",
            "data/tau2/domains/mock/tasks.json",
        ),
    ],
)
def test_tau_says_one_line_for_a_huge_data_file(
    tmp_path: Path, args: list[str], root_var: str, rel: str
) -> None:
    """A 1 TiB (sparse) file in a data directory of either suite: one line, exit 2 (it
    used to be read whole: a MemoryError traceback)."""
    source = DATA_DIR if root_var == "TAU_BENCH_DATA" else TAU3_DIR
    if not source.is_dir():
        pytest.skip(f"no {source}")
    root = tmp_path / "data"
    _sparse(mirror_except(source, root, rel), 1 << 40)
    env = {**os.environ, root_var: str(root), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.run(
        [TAU, *args], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == [
        f"error: {root / rel} (more than 256 MiB) is too large: the data directory is "
        f"damaged; {_hint(root_var)}"
    ], proc.stderr


def _hint(root_var: str) -> str:
    from tau_bench.tau3.data import PULL_HINT as TAU3_HINT

    return PULL_HINT if root_var == "TAU_BENCH_DATA" else TAU3_HINT
