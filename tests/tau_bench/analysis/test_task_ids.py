"""Task ids of every kind: plain indices, `domain/N`, other text."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tau_bench.task_ids import (
    expand_task_ids,
    file_part,
    ids_text,
    parse_run_task_id,
    parse_task_id,
    qualify,
    sort_key,
    sorted_ids,
    task_domain,
    task_index,
)
from tests.conftest import DATA_DIR
from tests.tau_bench.analysis.conftest import Runs


def test_parse() -> None:
    assert parse_task_id(12) == 12
    assert parse_task_id("12") == 12 and parse_task_id(" -1 ") == -1
    assert parse_task_id(12.0) == 12
    assert parse_task_id("retail/07") == "retail/7"
    assert parse_task_id(" airline / 3 ") == "airline/3"
    assert parse_task_id("custom-task") == "custom-task"
    for bad in (True, 1.5, None, "", "  ", [1]):
        with pytest.raises(ValueError):
            parse_task_id(bad)


def test_parts() -> None:
    assert (task_domain("retail/12"), task_index("retail/12")) == ("retail", 12)
    assert (task_domain(12), task_index(12)) == (None, 12)
    assert (task_domain("custom"), task_index("custom")) == (None, None)
    assert qualify(3, "airline") == "airline/3" and qualify("retail/3", "airline") == "retail/3"


def test_mixed_ids_sort_by_domain_then_index() -> None:
    ids: list[Any] = [10, "retail/10", "retail/2", 2, "airline/1", "zeta", "retail/2"]
    assert sorted_ids(ids) == [2, 10, "zeta", "airline/1", "retail/2", "retail/10"]
    with pytest.raises(TypeError):
        sorted(ids)  # why the key exists


@given(
    st.lists(
        st.one_of(
            st.integers(-5, 200),
            st.builds(
                lambda d, i: f"{d}/{i}", st.sampled_from(["retail", "airline"]), st.integers(0, 200)
            ),
            st.text(alphabet="abcxyz-", min_size=1, max_size=6),
        ),
        max_size=30,
    ),
    st.randoms(use_true_random=False),
)
def test_sorting_is_total_and_independent_of_input_order(ids: list, rng: random.Random) -> None:
    shuffled = list(ids)
    rng.shuffle(shuffled)
    assert sorted_ids(ids) == sorted_ids(shuffled)
    keys = [sort_key(t) for t in sorted_ids(ids)]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)


def test_file_part() -> None:
    assert file_part("retail/12") == "retail-12"
    assert file_part(7) == "7"
    assert file_part("a b/c") == "a_b-c"
    assert file_part("../..") == "task"


def test_ids_text_ranges_within_a_domain() -> None:
    ids = ["retail/0", "retail/1", "retail/2", "airline/5", 3, 4, "airline/7"]
    assert ids_text(ids) == "3-4, airline/5, airline/7, retail/0-2"
    assert ids_text([5, 1, 2, 3, 9]) == "1-3, 5, 9"


def test_ranges_expand_in_order() -> None:
    from tau_bench.task_ids import expand_task_ids

    assert expand_task_ids("0-4 7 9-12") == [0, 1, 2, 3, 4, 7, 9, 10, 11, 12]
    assert expand_task_ids("retail/2-4,airline/1") == [
        "retail/2",
        "retail/3",
        "retail/4",
        "airline/1",
    ]
    assert expand_task_ids(5) == [5] and expand_task_ids("3-3") == [3]
    for bad in ("4-2", "0-10000", "1-", "-", "a-b", "", 1.5, True):
        with pytest.raises(ValueError):
            expand_task_ids(bad)


LONG = "9" * 5000  # more digits than Python converts to an int (4,300)


@pytest.mark.parametrize(
    "value",
    [f"airline/{LONG}", LONG, f"-{LONG}", "9" * 19, "retail/" + "1" * 19, 10**18, -(10**18), 1e20],
)
def test_an_index_of_more_than_18_digits_is_no_task_id(value: Any) -> None:
    """One ValueError (what every reader of ids turns into one line), never the int
    conversion's own "Exceeds the limit" error."""
    with pytest.raises(ValueError, match="more than 18 digits") as caught:
        parse_task_id(value)
    assert len(str(caught.value)) < 200
    with pytest.raises(ValueError, match="more than 18 digits"):
        parse_run_task_id(value)


@pytest.mark.parametrize("value", ["²", "①", "-²"])
def test_a_unicode_digit_is_no_index(value: str) -> None:
    # str.isdigit() takes "²", which int() then refused with its own message.
    with pytest.raises(ValueError, match=r"^task id must be an integer or DOMAIN/ID, got"):
        parse_run_task_id(value)


def test_ranges_with_too_many_digits_are_refused() -> None:
    for value in (f"0-{LONG}", f"retail/{LONG}-{LONG}", "0-" + "9" * 19):
        with pytest.raises(ValueError, match=r"task range .* more than 18 digits"):
            expand_task_ids(value)
    assert expand_task_ids("retail/999999999999999998-999999999999999999") == [
        "retail/999999999999999998",
        "retail/999999999999999999",
    ]


def test_ids_already_read_with_a_long_index_never_raise() -> None:
    """Results records keep any non-empty text as an id: the helpers that sort and group
    them take a long "domain/<digits>" as other text."""
    long_id = f"airline/{LONG}"
    assert (task_domain(long_id), task_index(long_id)) == (None, None)
    assert sorted_ids([long_id, "airline/3", 2]) == [2, long_id, "airline/3"]
    assert file_part(long_id).startswith("airline-999")
    assert parse_task_id("9" * 18) == 10**18 - 1


def test_tau_view_and_compare_show_a_log_with_a_long_task_id(runs: Runs, tmp_path: Path) -> None:
    """A record's id `"airline/<5,000 digits>"` is other text to the readers that sort and
    group ids (the installed `tau view` / `tau compare` used to stop with a traceback)."""
    header, *episodes = [json.loads(x) for x in runs.oracle.read_text().splitlines()]
    episodes[0]["task_id"] = f"airline/{LONG}"
    log = tmp_path / "long-id.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in [header, *episodes]))
    env = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    for args in (["view", str(log)], ["compare", "--allow-mismatch", str(runs.oracle), str(log)]):
        proc = subprocess.run(
            [str(Path(sys.executable).with_name("tau")), *args],
            capture_output=True,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
