"""Every ground-truth step and error probe of the original must reproduce exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tau_bench.domains import load_domain
from tau_bench.env import Env
from tau_bench.tasks import Task

from ..conftest import CONFORMANCE_DIR, DATA_DIR

SPLITS = [("airline", "test"), ("retail", "test"), ("retail", "train"), ("retail", "dev")]


def _lines(name: str) -> list[dict[str, Any]]:
    path = Path(CONFORMANCE_DIR) / name
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _cases() -> list[Any]:
    cases = []
    for domain, split in SPLITS:
        for vec in _lines(f"{domain}_{split}.jsonl"):
            cases.append(pytest.param(domain, split, vec, id=f"{domain}-{split}-{vec['task_id']}"))
    return cases


@pytest.mark.parametrize(("domain_name", "split", "vec"), _cases())
def test_ground_truth_vector(domain_name: str, split: str, vec: dict[str, Any]) -> None:
    domain = load_domain(domain_name, DATA_DIR)
    task = domain.tasks(split)[vec["task_id"]]
    env = Env(domain, task)
    assert env.data_hash() == vec["initial_data_hash"]
    for i, step in enumerate(vec["steps"]):
        action = step["action"]
        obs = env.execute(action["name"], action["kwargs"]).content
        assert obs == step["observation"], f"step {i} ({action['name']})"
        done = env.is_terminate(action["name"])
        assert done == step["done"], f"step {i} done"
        if done:
            result = env.reward()
            assert result.reward == step["reward"]
            assert result.gt_data_hash == step["data_hash_after"]
            assert result.original_info == step["reward_info"]["info"]
            break
        assert env.data_hash() == step["data_hash_after"], f"step {i} hash"
    else:
        assert env.data_hash() == vec["final_data_hash"]
        result = env.reward()
        assert result.gt_data_hash == vec["gt_data_hash"]
        assert result.reward == vec["reward_if_agent_did_exactly_this"]
        assert result.original_info == vec["reward_info"]
    if "with_final_respond" in vec:
        final = vec["with_final_respond"]
        env.respond(final["respond_content"])
        result = env.reward()
        assert result.reward == final["reward"]
        assert result.original_info == final["reward_info"]["info"]
        assert [a.model_dump() for a in result.gt_actions] == final["reward_info"]["actions"]


def _probe_cases() -> list[Any]:
    cases = []
    for domain in ("airline", "retail"):
        for probe in _lines(f"{domain}_error_probes.jsonl"):
            cases.append(pytest.param(domain, probe, id=f"{domain}-{probe['probe_id']}"))
    return cases


@pytest.mark.parametrize(("domain_name", "probe"), _probe_cases())
def test_error_probe(domain_name: str, probe: dict[str, Any]) -> None:
    domain = load_domain(domain_name, DATA_DIR)
    task: Task = domain.tasks("test")[0]
    env = Env(domain, task)
    assert env.data_hash() == probe["initial_data_hash"]
    for i, step in enumerate(probe["steps"]):
        action = step["action"]
        if "uncaught_exception" in step:
            # The original crashed here (respond without content, Q7). We never raise:
            # the observation is an Error string and the DB is unchanged.
            before = env.data_hash()
            obs = env.execute(action["name"], action["kwargs"]).content
            assert obs.startswith("Error:")
            assert env.data_hash() == before
            continue
        obs = env.execute(action["name"], action["kwargs"]).content
        assert obs == step["observation"], f"step {i} ({action['name']})"
        done = env.is_terminate(action["name"])
        assert done == step["done"]
        if done:
            result = env.reward()
            assert result.reward == step["reward"]
            assert env.domain.base_db is not None
            assert result.gt_data_hash == step["data_hash_after"]
        else:
            assert env.data_hash() == step["data_hash_after"], f"step {i} hash"


def test_hash_examples() -> None:
    from tau_bench.hashing import consistent_hash, hashable_repr

    examples = json.loads((Path(CONFORMANCE_DIR) / "hash_examples.json").read_text())
    assert examples
    for ex in examples:
        value = json.loads(ex["input_json"])
        assert hashable_repr(value) == ex["str_of_to_hashable"]
        assert consistent_hash(value) == ex["sha256"]


@pytest.mark.parametrize("domain_name", ["airline", "retail"])
def test_initial_hash_matches_manifest(domain_name: str) -> None:
    manifest = json.loads((Path(DATA_DIR) / "MANIFEST.json").read_text())
    domain = load_domain(domain_name, DATA_DIR)
    expected = manifest["domains"][domain_name]["initial_data_hash"]
    assert domain.base_db.data_hash == expected
    assert domain.base_db.episode().slow_hash() == expected
