"""Telecom fixtures on top of the τ³ ones: the loaded domain and a fresh environment.

The data root comes from `tests/tau_bench/tau3/conftest.py` (`$TAU3_BENCH_DATA`, else
`../shared/datasets/tau2-bench`); a missing root fails, these tests are never skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tau_bench.tau3.domain import LoadedDomain, load_domain
from tau_bench.tau3.environment import Environment
from tests.tau_bench.tau3.conftest import require_data


@pytest.fixture(scope="session")
def root() -> Path:
    return require_data()


@pytest.fixture(scope="session")
def telecom(root: Path) -> LoadedDomain:
    return load_domain("telecom", root)


@pytest.fixture()
def env(telecom: LoadedDomain) -> Environment:
    return Environment(telecom, deterministic_ids=True)
