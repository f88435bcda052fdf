"""`json_decode.loads` accepts exactly what `json.loads` accepts, and decodes it the same."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tau_adapters.jsonsafe import JSONDepthError
from tau_bench.json_decode import (
    JSONIntegerTooLongError,
    JSONTooDeepError,
    loads,
    stdlib_loads,
)
from tests.conftest import DATA_DIR

documents = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@given(documents)
def test_decodes_what_json_dumps_writes_as_json_loads_does(doc: object) -> None:
    for text in (json.dumps(doc), json.dumps(doc, ensure_ascii=False)):
        assert _same(loads(text.encode("utf-8")), json.loads(text))
        assert _same(loads(text), json.loads(text))


def test_the_standard_library_grammar_beyond_orjson_still_decodes() -> None:
    assert math.isnan(loads(b'{"reward": NaN}')["reward"])
    assert loads(b"[Infinity, -Infinity]") == [math.inf, -math.inf]
    assert loads(b"123456789012345678901234567890") == 123456789012345678901234567890
    assert loads(b"[-9223372036854775809, 18446744073709551616]") == [-(2**63) - 1, 2**64]
    assert loads(bytearray(b"[1e400]")) == [math.inf] and loads(memoryview(b"[1]")) == [1]
    assert loads('"\\ud800"') == "\ud800"  # a lone surrogate, as json.dumps writes it


@pytest.mark.parametrize("bad", [b"", b"{", b'{"a": 1', b"nul", b"[1,]"])
def test_what_is_not_json_raises_the_standard_error(bad: bytes) -> None:
    with pytest.raises(json.JSONDecodeError):
        loads(bad)


@pytest.mark.parametrize("depth", [1025, 5000, 200_000])
def test_too_deep_for_the_standard_library_is_a_decode_error_not_recursion(depth: int) -> None:
    doc = "[" * depth + "]" * depth
    for data in (doc, doc.encode("utf-8")):
        with pytest.raises(JSONTooDeepError) as caught:
            loads(data)
        # A JSONDecodeError (what the results readers skip as a damaged line) and a
        # JSONDepthError (what the network edges catch); a ValueError either way.
        assert isinstance(caught.value, json.JSONDecodeError)
        assert isinstance(caught.value, JSONDepthError)
        assert str(caught.value) == "JSON nested too deep to decode"


def test_deep_documents_the_standard_library_follows_still_decode() -> None:
    doc = "[" * 400 + "NaN" + "]" * 400  # NaN: decoded by json.loads, not orjson
    assert repr(loads(doc)) == repr(json.loads(doc))


def _tau(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    tau = Path(sys.executable).parent / "tau"
    return subprocess.run(
        [str(tau), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})},
    )


def test_a_results_log_with_a_deep_header_is_one_line(tmp_path: Path) -> None:
    """`tau run --resume` and `tau compare` read logs through `loads`: a header nested
    too deep is a damaged line, so the file is no results log; never a traceback."""
    log = tmp_path / "deep.jsonl"
    log.write_text('{"type": "header", "config": ' + "[" * 5000 + "]" * 5000 + "}\n")
    for args in (["run", "--resume", str(log)], ["compare", str(log), str(log)]):
        proc = _tau(*args, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and str(log) in lines[0], proc.stderr
        assert "is not a tau run results log" in lines[0], proc.stderr


LONG = "9" * 5000  # more digits than Python converts to an int (4,300 by default)


@pytest.mark.parametrize(
    ("doc", "position"),
    [(f"[1, {LONG}]", 4), (f'{{"a":\n -{LONG}}}', 7), (f'["{LONG}", 2{LONG}]', 5005)],
)
def test_an_integer_too_long_to_convert_is_a_decode_error(doc: str, position: int) -> None:
    """`json.loads` raises a plain ValueError here, which readers that skip or report
    bad lines (they catch JSONDecodeError) would not catch."""
    for data in (doc, doc.encode("utf-8")):
        for decode in (loads, stdlib_loads):
            with pytest.raises(JSONIntegerTooLongError) as caught:
                decode(data)
            assert isinstance(caught.value, json.JSONDecodeError)
            assert caught.value.pos == position
            assert (
                caught.value.msg == f"integer longer than {sys.get_int_max_str_digits():,} digits"
            )
    assert loads(f"[{LONG[:4300]}, 1.{LONG}, 1{LONG}e5]")[0] == int(LONG[:4300])


def test_a_results_log_with_a_huge_integer_is_one_line(tmp_path: Path) -> None:
    log = tmp_path / "long.jsonl"
    log.write_text('{"type": "header", "config": {"seed": ' + LONG + "}}\n")
    for args in (["run", "--resume", str(log)], ["compare", str(log), str(log)]):
        proc = _tau(*args, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and str(log) in lines[0], proc.stderr
        assert "is not a tau run results log" in lines[0], proc.stderr


TASK = '{"user_id": "u", "instruction": "i", "actions": [], "outputs": [%s]}'


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("lines.jsonl", TASK % 1 + "\n" + TASK % LONG + "\n", "at line 2"),
        ("one.json", TASK % LONG, "at line 1"),
        ("array.json", "[\n" + TASK % 1 + ",\n" + TASK % LONG + "\n]", "at line 3"),
    ],
)
def test_a_tasks_file_with_a_huge_integer_is_one_line(
    tmp_path: Path, name: str, text: str, where: str
) -> None:
    """`tau tasks verify --tasks-file` and `tau run --tasks-file` (`tau_bench.task_files`)."""
    path = tmp_path / name
    path.write_text(text)
    data = {"TAU_BENCH_DATA": str(DATA_DIR)}
    run = ["--agent-strategy", "oracle", "--user-strategy", "scripted", "--log-dir", "logs"]
    for args in (
        ["tasks", "verify", "--env", "airline", "--tasks-file", str(path)],
        ["run", "--env", "airline", *run, "--tasks-file", str(path)],
    ):
        proc = _tau(*args, cwd=tmp_path, env=data)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1, proc.stderr
        expected = f"error: {path}: not valid JSON (integer longer than 4,300 digits {where})"
        assert lines[0] == expected, proc.stderr
