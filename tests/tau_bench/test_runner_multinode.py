"""A run on a real Ray cluster of two nodes: `ray.cluster_utils.Cluster` starts a head
and one more raylet on this machine (one CPU each, so the two workers must land on
different nodes). The driver joins it by address, as `--ray-address` does.

The single-node backend is tested in tests/tau_bench/test_runner_workers.py.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ray.cluster_utils import Cluster

from tau_bench.config import RunConfig
from tau_bench.runner import Runner, prepare_run
from tau_bench.runner.collector import YOUNG_THRESHOLD
from tests.conftest import DATA_DIR

DEADLINE = 120.0  # seconds the nodes get to register (a loaded 2-core machine is slow)
TASKS = [0, 1, 2, 3, 4, 5]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A head and a second node, one CPU each, no dashboard; shut down at the end."""
    nodes = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    try:
        nodes.add_node(num_cpus=1)
        nodes.wait_for_nodes(timeout=DEADLINE)
        yield nodes
    finally:
        nodes.shutdown()


def config(tmp_path: Path, name: str, **kw: Any) -> RunConfig:
    return RunConfig(
        env="retail",
        agent_strategy="oracle",
        user_strategy="scripted",
        task_ids=TASKS,
        num_trials=2,
        max_concurrency=4,
        log_dir=str(tmp_path),
        data_dir=str(DATA_DIR),
        run_name=name,
        quiet=True,
        **kw,
    )


def log_keys(path: Path) -> list[tuple[Any, int]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [(r["task_id"], r["trial"]) for r in rows if r.get("type") == "episode"]


async def test_a_run_spreads_over_both_nodes_and_matches_a_local_run(
    tmp_path: Path, cluster: Cluster
) -> None:
    local = await Runner(prepare_run(config(tmp_path, "local"))).run()
    runner = Runner(
        prepare_run(
            config(tmp_path, "multi", backend="ray", ray_address=cluster.address, workers=2)
        )
    )
    outcome = await runner.run()

    planned = len(TASKS) * 2
    keys = log_keys(tmp_path / "multi.jsonl")
    assert len(keys) == len(set(keys)) == planned  # complete, nothing twice
    assert [(r.task_id, r.trial, r.reward, r.error) for r in outcome.records] == [
        (r.task_id, r.trial, r.reward, r.error) for r in local.records
    ]
    assert outcome.summary["errors"] == 0 and "worker_errors" not in outcome.summary
    # Where the episodes ran: each worker reports its node and how many it ran.
    per_node = Counter[str]()
    for stats in runner.worker_stats:
        per_node[stats["node_id"]] += stats["episodes"]
    assert set(per_node) == {node.node_id for node in cluster.list_all_nodes()}
    assert all(n > 0 for n in per_node.values()) and sum(per_node.values()) == planned
    # Each worker ran its episodes at a run's collector pace, as a local run does.
    assert [s["gc_young_threshold"] for s in runner.worker_stats] == [YOUNG_THRESHOLD] * 2
