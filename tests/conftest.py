"""Shared fixtures: the benchmark data directory and loaded domains.

Tests read the data from TAU_BENCH_DATA (the make targets and .ci/run set it to
../shared/datasets/tau-bench). Without it the suite fails loudly rather than skipping:
conformance is core behaviour.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# The tests that press Ctrl-C send SIGINT to a `tau` child. Started as a background job
# of a shell without job control (`make test &` in a script), this process inherits
# SIGINT ignored and so would every child: Python then installs no KeyboardInterrupt
# handler in them, the signal is lost, and those tests wait out their deadlines and fail.
# A handler here is reset to the default in each child when it starts (exec).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
# Direct model calls on httpx's transport, which respx mocks (tests/tau_bench/llm/
# test_direct.py covers the aiohttp transport too).
os.environ.setdefault("TAU_LLM_DIRECT_TRANSPORT", "httpx")


def _data_dir() -> Path:
    value = os.environ.get("TAU_BENCH_DATA")
    if not value:
        sibling = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "tau-bench"
        if sibling.is_dir():
            return sibling
        raise RuntimeError("set TAU_BENCH_DATA to a τ-bench data directory to run the tests")
    return Path(value)


DATA_DIR = _data_dir()


def _tau3_data_dir() -> Path:
    value = os.environ.get("TAU3_BENCH_DATA")
    if value:
        return Path(value)
    return Path(__file__).resolve().parents[2] / "shared" / "datasets" / "tau2-bench"


TAU3_DATA_DIR = _tau3_data_dir()
CONFORMANCE_DIR = DATA_DIR / "conformance"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA_DIR


@pytest.fixture(scope="session")
def airline():
    from tau_bench.domains import load_domain

    return load_domain("airline", DATA_DIR)


@pytest.fixture(scope="session")
def retail():
    from tau_bench.domains import load_domain

    return load_domain("retail", DATA_DIR)
