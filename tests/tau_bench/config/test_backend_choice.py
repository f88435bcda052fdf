"""`backend_conflict`: an explicit local backend against the settings that mean Ray."""

from __future__ import annotations

from tau_bench.config import backend_conflict


def test_only_an_explicit_local_backend_conflicts() -> None:
    assert backend_conflict(None, 4, "auto") is None  # no choice made: they mean Ray
    assert backend_conflict("ray", 4, "auto") is None
    assert backend_conflict("local", 1, None) is None
    assert backend_conflict("local", "1", "  ") is None  # YAML strings; an empty address
    assert "workers 3 and a Ray address asks" in str(backend_conflict("local", "3", "h:1"))


def test_the_address_is_not_echoed() -> None:
    problem = backend_conflict("local", 1, "ray://me:hunter2@head:10001")
    assert problem is not None and "hunter2" not in problem and "head" not in problem


def test_an_ill_typed_workers_is_left_to_the_configs_own_check() -> None:
    assert backend_conflict("local", "many", None) is None
