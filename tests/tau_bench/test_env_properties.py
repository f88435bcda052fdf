"""Property tests on random tool calls: never raise, no cross-talk, fast hash == slow hash."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tau_bench.domains import load_domain
from tau_bench.env import Env

from ..conftest import DATA_DIR

DOMAINS = {name: load_domain(name, DATA_DIR) for name in ("airline", "retail")}


def _gt_pool(name: str) -> list[tuple[str, dict[str, Any]]]:
    domain = DOMAINS[name]
    pool = []
    for split in domain.splits:
        for task in domain.tasks(split):
            pool.extend((a.name, a.kwargs) for a in task.actions)
    return pool


POOLS = {name: _gt_pool(name) for name in DOMAINS}
# Deep copies of the shared base tables: a tool that mutated a base record would
# silently leak into every other episode; comparing against these catches it.
SNAPSHOTS = {name: copy.deepcopy(d.base_db.tables) for name, d in DOMAINS.items()}

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1000, 10**6),
    st.floats(allow_nan=False, width=32),
    st.text(max_size=12),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def tool_call(draw: st.DrawFn, domain_name: str) -> tuple[Any, Any]:
    domain = DOMAINS[domain_name]
    kind = draw(st.integers(0, 5))
    if kind <= 2:  # a real ground-truth call, sometimes with one argument perturbed
        name, kwargs = draw(st.sampled_from(POOLS[domain_name]))
        kwargs = copy.deepcopy(kwargs)
        if kind == 2 and kwargs:
            key = draw(st.sampled_from(sorted(kwargs)))
            kwargs[key] = draw(json_value)
        return name, kwargs
    if kind == 3:  # a real tool with random arguments
        name = draw(st.sampled_from(sorted(domain.tools)))
        return name, draw(st.dictionaries(st.text(max_size=10), json_value, max_size=4))
    if kind == 4:  # garbage names and non-dict kwargs
        return draw(st.one_of(st.text(max_size=10), st.integers())), draw(json_value)
    return "respond", draw(st.one_of(st.just({"content": "hello"}), json_value))


def calls(domain_name: str) -> st.SearchStrategy[list[tuple[Any, Any]]]:
    return st.lists(tool_call(domain_name), min_size=1, max_size=6)


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.sampled_from(sorted(DOMAINS)), st.data())
def test_execute_never_raises_and_fast_hash_matches_slow_hash(
    name: str, data: st.DataObject
) -> None:
    domain = DOMAINS[name]
    env = Env(domain)
    for tool, kwargs in data.draw(calls(name)):
        output = env.execute(tool, kwargs)
        assert isinstance(output.content, str)
        assert output.is_error == output.content.startswith(("Error:", "Unknown action"))
    assert env.data_hash() == env.db.slow_hash()


@SETTINGS
@given(st.sampled_from(sorted(DOMAINS)), st.data())
def test_episodes_are_isolated_and_pristine_hash_never_changes(
    name: str, data: st.DataObject
) -> None:
    domain = DOMAINS[name]
    pristine = domain.base_db.data_hash
    a, b = Env(domain), Env(domain)
    for tool, kwargs in data.draw(calls(name)):
        a.execute(tool, kwargs)
    assert b.data_hash() == pristine
    assert domain.base_db.tables == SNAPSHOTS[name]
    a.reset()
    assert a.data_hash() == pristine
