"""Real τ³ runs made with the installed `tau` script (oracle agent, scripted user)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.conftest import DATA_DIR
from tests.tau_bench.tau3.conftest import tau3_data_root

TAU = Path(__file__).resolve().parents[3] / ".venv" / "bin" / "tau"
ENV = {
    **os.environ,
    "TAU_BENCH_DATA": str(DATA_DIR),
    "TAU3_BENCH_DATA": str(tau3_data_root()),
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}


def tau(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    """The console script, as users run it."""
    proc = subprocess.run(
        [str(TAU), *map(str, args)], capture_output=True, text=True, env=ENV, timeout=600
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"tau {args} exited {proc.returncode}:\n{proc.stderr}")
    return proc


def oracle_run(folder: Path, env: str, task_ids: str, trials: int = 1) -> Path:
    """The results log of an oracle run of `task_ids` on `env`."""
    tau(
        "run", "--env", env, "--agent-strategy", "oracle", "--user-strategy", "scripted",
        "--task-ids", task_ids, "--num-trials", str(trials), "--judge-model", "assume-met",
        "--log-dir", folder, "--quiet",
    )  # fmt: skip
    (log,) = folder.glob("*.jsonl")
    return log
