"""The ast readers of upstream sources, round-tripped through upstream-shaped Python."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tau_bench.data.pinned import load_pinned
from tau_bench.data.upstream_source import (
    UpstreamSourceError,
    read_rules,
    read_tasks,
    read_tool_imports,
    read_tool_info,
    read_tool_order,
)
from tests.conftest import DATA_DIR
from tests.tau_bench.data.fake_upstream import (
    class_name,
    rules_source,
    tasks_source,
    tool_source,
    tools_init_source,
)

TABLE = load_pinned()


def _derived(obj: Any) -> str:
    return json.dumps(obj, indent=2) + "\n"


def _entries(kind: str) -> list[Any]:
    return [f for f in TABLE.files if f.kind == kind]


@pytest.mark.parametrize("entry", _entries("tasks"), ids=lambda e: e.path)
def test_tasks_round_trip_every_split(entry):
    raw = (DATA_DIR / entry.path).read_text()
    expected = json.loads(raw)
    assert entry.variable
    got = read_tasks(tasks_source(expected, entry.variable), entry.variable)
    assert got == expected
    # Same key order and number types, byte for byte: the pinned sha256 holds.
    assert _derived(got) == raw
    assert hashlib.sha256(_derived(got).encode()).hexdigest() == entry.sha256


def test_all_real_splits_are_covered():
    splits = {e.path for e in _entries("tasks")}
    assert splits == {
        "airline/tasks/test.json",
        "retail/tasks/test.json",
        "retail/tasks/train.json",
        "retail/tasks/dev.json",
    }


@pytest.mark.parametrize("entry", _entries("rules"), ids=lambda e: e.path)
def test_rules_round_trip(entry):
    raw = (DATA_DIR / entry.path).read_text()
    got = read_rules(rules_source(json.loads(raw)))
    assert _derived(got) == raw


@pytest.mark.parametrize("entry", _entries("tools"), ids=lambda e: e.path)
def test_tools_round_trip(entry):
    raw = (DATA_DIR / entry.path).read_text()
    infos = json.loads(raw)
    names = [info["function"]["name"] for info in infos]
    init = tools_init_source(names)
    assert read_tool_order(init) == names
    assert read_tool_imports(init) == [(n, class_name(n)) for n in names]
    got = [read_tool_info(tool_source(info)) for info in infos]
    assert got == infos
    assert _derived(got) == raw
    assert hashlib.sha256(raw.encode()).hexdigest() == entry.sha256


def test_task_details():
    source = """
from tau_bench.types import Action, Task

OTHER = [1]
TASKS = [
    Task(
        annotator=3,
        user_id="u",
        instruction="a " "b",
        actions=[
            Action(name="x", kwargs={"z": 1, "a": 2.50, "n": -4, "t": True, "none": None}),
            Action(name="y", kwargs={}),
        ],
    ),
    Task(user_id="v", instruction="i", actions=[], outputs=["1", "2"], annotator="0"),
]
"""
    tasks = read_tasks(source, "TASKS")
    assert tasks[0] == {
        "user_id": "u",
        "instruction": "a b",
        "actions": [
            {"name": "x", "kwargs": {"z": 1, "a": 2.5, "n": -4, "t": True, "none": None}},
            {"name": "y", "kwargs": {}},
        ],
        "outputs": [],
        "annotator": 3,
    }
    assert list(tasks[0]) == ["user_id", "instruction", "actions", "outputs", "annotator"]
    assert list(tasks[0]["actions"][0]["kwargs"]) == ["z", "a", "n", "t", "none"]
    assert isinstance(tasks[0]["actions"][0]["kwargs"]["z"], int)
    assert isinstance(tasks[0]["actions"][0]["kwargs"]["a"], float)
    assert tasks[1]["outputs"] == ["1", "2"]
    assert tasks[1]["annotator"] == "0"


def test_sources_are_never_executed():
    source = 'raise SystemExit("executed!")\nRULES = ["only data"]\n'
    assert read_rules(source) == ["only data"]
    tasks_src = 'import os\nos._exit(3)\nT = [Task(user_id="u", instruction="i", actions=[])]\n'
    assert read_tasks(tasks_src, "T")[0]["user_id"] == "u"


def test_lowercase_rules_variable_is_accepted():
    assert read_rules("rules = []\n") == []


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("T = [Task(user_id=f(), instruction='i', actions=[])]", "not a literal"),
        ("T = [Task(user_id='u', instruction='i', actions=[Call(name='x')])]", "Action"),
        ("T = [Task('u', instruction='i', actions=[])]", "positional"),
        ("T = [Task(instruction='i', actions=[])]", "user_id"),
        ("T = make_tasks()", "not a list"),
        ("U = []", "no top-level assignment to T"),
        ("T = [", "not valid Python"),
    ],
)
def test_malformed_task_sources_raise(source, message):
    with pytest.raises(UpstreamSourceError, match=message):
        read_tasks(source, "T")


def test_malformed_tool_sources_raise():
    with pytest.raises(UpstreamSourceError, match="not imported"):
        read_tool_order("from .a import A\nALL_TOOLS = [A, B]\n")
    with pytest.raises(UpstreamSourceError, match="ALL_TOOLS"):
        read_tool_order("from .a import A\n")
    with pytest.raises(UpstreamSourceError, match="no get_info"):
        read_tool_info("class A:\n    pass\n")
    with pytest.raises(UpstreamSourceError, match="not a literal"):
        read_tool_info("class A:\n    def get_info():\n        return {'a': f()}\n")
    two = "class A:\n    def get_info():\n        return {}\nclass B(A):\n    def get_info():\n        return {'b': 1}\n"
    with pytest.raises(UpstreamSourceError, match="several"):
        read_tool_info(two)
    assert read_tool_info(two, "B") == {"b": 1}
    with pytest.raises(UpstreamSourceError, match="no get_info in class C"):
        read_tool_info(two, "C")


_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_tasks = st.lists(
    st.fixed_dictionaries(
        {
            "user_id": st.text(max_size=12),
            "instruction": st.text(max_size=40),
            "actions": st.lists(
                st.fixed_dictionaries(
                    {
                        "name": st.text(min_size=1, max_size=10),
                        "kwargs": st.dictionaries(st.text(max_size=8), _json_values, max_size=5),
                    }
                ),
                max_size=4,
            ),
            "outputs": st.lists(st.text(max_size=10), max_size=3),
            "annotator": st.text(max_size=3),
        }
    ),
    max_size=5,
)


@settings(max_examples=150, deadline=None)
@given(_tasks)
def test_tasks_round_trip_property(tasks):
    got = read_tasks(tasks_source(tasks, "TASKS"), "TASKS")
    expected = [
        {
            "user_id": t["user_id"],
            "instruction": t["instruction"],
            "actions": [{"name": a["name"], "kwargs": a["kwargs"]} for a in t["actions"]],
            "outputs": t["outputs"],
            "annotator": t["annotator"],
        }
        for t in tasks
    ]
    assert _derived(got) == _derived(expected)
