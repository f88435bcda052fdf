"""Shared fixtures for the τ³ tests: where the τ³ data lives (a missing dir FAILS)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]


def tau3_data_root() -> Path:
    """`$TAU3_BENCH_DATA`, else `../shared/datasets/tau2-bench` next to the repo."""
    env = os.environ.get("TAU3_BENCH_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "datasets" / "tau2-bench"


def require_data() -> Path:
    root = tau3_data_root()
    if not (root / "data" / "tau2" / "domains").is_dir():
        pytest.fail(
            f"τ³ data not found at {root}: set TAU3_BENCH_DATA to a copy of "
            "shared/datasets/tau2-bench",
            pytrace=False,
        )
    return root


@pytest.fixture(scope="session")
def data_root() -> Path:
    return require_data()
