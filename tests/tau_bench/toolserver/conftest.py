"""The toy domain (a write tool, no data files) that the HTTP adapter tests also use."""

from __future__ import annotations

import pytest

from tau_bench.domains import Domain
from tests.adapters.http.conftest import TOY_TASK, make_toy_domain

__all__ = ["TOY_TASK"]


@pytest.fixture
def toy() -> Domain:
    return make_toy_domain()
