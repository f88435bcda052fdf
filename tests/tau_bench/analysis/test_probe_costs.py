"""Costs a τ-bench results file does not record are unknown, never $0 (a probe's finding:
the published GPT-4o run compared as a free agent). Through the installed `tau`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.tau_bench.analysis.conftest import HISTORICAL

TAU = Path(sys.executable).parent / "tau"


def _compare_json(*args: str | Path, out: Path) -> dict:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.run(
        [str(TAU), "compare", *map(str, args), "--no-matrix", "--json", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def test_published_run_agent_cost_is_unknown_not_zero(tmp_path: Path) -> None:
    # the original runner kept only `user_cost`; GPT-4o's own spend is not in the file
    run = _compare_json(HISTORICAL, out=tmp_path / "c.json")["runs"][0]
    costs = run["costs"]
    assert costs["agent"] is None and costs["total"] is None
    assert costs["per_resolved_task"] is None
    assert costs["known"] > 0.5  # the user simulator's $0.50 is still shown
    # The row's own figures (the cost-vs-reward chart's) say the same as the tables.
    assert run["cost_agent"] is None and run["cost_total"] is None
    assert run["cost_per_episode"] is None


def test_entry_costs_that_are_given_are_kept(tmp_path: Path) -> None:
    entries = json.loads(HISTORICAL.read_text())[:8]
    for entry in entries:
        entry["info"]["agent_cost"] = 0.25
        entry["info"]["user_cost"] = 0.125
    src = tmp_path / "given.json"
    src.write_text(json.dumps(entries))
    run = _compare_json(src, out=tmp_path / "c.json")["runs"][0]
    costs = run["costs"]
    assert (costs["agent"], costs["user"], costs["total"]) == (2.0, 1.0, 3.0)
    assert (run["cost_agent"], run["cost_user"], run["cost_total"]) == (2.0, 1.0, 3.0)
