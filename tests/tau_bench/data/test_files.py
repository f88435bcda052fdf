"""`tau_bench.data.files`: a data file that cannot be used is one `DataDirError` naming it;
a good one reads exactly as the standard library reads it."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from tau_bench.data.errors import DataDirError
from tau_bench.data.files import damaged, read_json, read_text, read_toml


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "No such file or directory"),
        (b'{"x":', "is not valid JSON (Expecting value"),
        (b"\xff\xfe[1]", "is not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "is not valid JSON (nested too deep)"),
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
