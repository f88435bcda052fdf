"""The dependency policy of pyproject.toml and uv.lock, checked without installing anything.

Why each rule exists: an adapter author installing the SDK must not get gRPC, a web
server, MCP or gymnasium; typer 0.30 may change its vendored click again; some litellm
releases on the registry were compromised; the README's commands install uv.lock.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from tests.packaging.hiding import ROOT

PYPROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())
LOCK: dict[str, Any] = tomllib.loads((ROOT / "uv.lock").read_text())
PROJECT = PYPROJECT["project"]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]
PACKAGES = {p["name"]: p for p in LOCK["package"]}

# Never part of the core install, directly or through another package.
HEAVY = {
    "grpcio",
    "google-cloud-dialogflow-cx",
    "google-cloud-ces",
    "fastapi",
    "starlette",
    "uvicorn",
    "mcp",
    "gymnasium",
    "matplotlib",
    "a2a-sdk",
    "ray",
}
COMPROMISED_LITELLM = ["1.82.7", "1.82.8", "1.107.0", "1.107.1", "1.107.5", "1.107.12"]


def _requirement(name: str, requirements: Iterable[str]) -> Requirement:
    found = [r for r in map(Requirement, requirements) if canonicalize_name(r.name) == name]
    assert len(found) == 1, f"expected one requirement on {name}, found {found}"
    return found[0]


def _closure(roots: Iterable[dict[str, Any]]) -> set[str]:
    """Every locked package reachable from `roots` (lock dependency entries), on any platform."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        dep = todo.pop()
        package = PACKAGES[dep["name"]]
        todo.extend(
            extra_dep
            for extra in dep.get("extra", [])
            for extra_dep in package.get("optional-dependencies", {}).get(extra, [])
        )
        if dep["name"] in seen:
            continue
        seen.add(dep["name"])
        todo.extend(package.get("dependencies", []))
    return seen


def test_core_install_pulls_in_no_heavy_package() -> None:
    core = _closure(PACKAGES["tau-adapters"]["dependencies"])
    assert "pydantic" in core and "typer" in core and "litellm" in core
    assert not core & HEAVY, f"the core install would bring {sorted(core & HEAVY)}"


def test_each_extra_brings_its_packages() -> None:
    expected = {
        "dialogflow": {"google-cloud-dialogflow-cx", "grpcio"},
        "http": {"fastapi", "uvicorn", "mcp"},
        "service": {"fastapi", "uvicorn"},
        "gym": {"gymnasium"},
        "report": {"matplotlib"},
        "a2a": {"a2a-sdk", "starlette", "uvicorn"},
        "ces": {"google-cloud-ces", "grpcio"},
        "ray": {"ray"},
    }
    optional = PACKAGES["tau-adapters"]["optional-dependencies"]
    for extra, names in expected.items():
        got = _closure(optional[extra])
        assert names <= got, f"extra {extra!r} lacks {sorted(names - got)}"


def test_all_is_every_other_extra() -> None:
    (all_requirement,) = map(Requirement, EXTRAS["all"])
    assert all_requirement.name == PROJECT["name"]
    assert all_requirement.extras == set(EXTRAS) - {"all"}


def test_typer_stays_in_the_tested_series() -> None:
    spec = _requirement("typer", PROJECT["dependencies"]).specifier
    assert "0.29.2" in spec
    assert "0.30.0" not in spec and "0.28.9" not in spec


@pytest.mark.parametrize("version", COMPROMISED_LITELLM)
def test_compromised_litellm_releases_are_excluded(version: str) -> None:
    spec = _requirement("litellm", PROJECT["dependencies"]).specifier
    assert version not in spec


def test_litellm_range_keeps_the_installed_series_and_the_lock_is_clean() -> None:
    spec = _requirement("litellm", PROJECT["dependencies"]).specifier
    assert "1.106.2" in spec and "1.106.0" in spec
    locked = PACKAGES["litellm"]["version"]
    assert locked in spec and locked not in COMPROMISED_LITELLM


def test_every_requirement_has_a_lower_bound() -> None:
    requirements = list(PROJECT["dependencies"])
    requirements += [r for name, rs in EXTRAS.items() if name != "all" for r in rs]
    requirements += [r for r in PYPROJECT["dependency-groups"]["dev"] if isinstance(r, str)]
    unbounded = [
        r
        for r in map(Requirement, requirements)
        if r.name != "types-PyYAML"  # stub versions follow PyYAML's; any recent one works
        and not any(s.operator in (">=", "==", "~=") for s in r.specifier)
    ]
    assert not unbounded, f"requirements without a lower bound: {unbounded}"


def test_lock_matches_pyproject() -> None:
    # The same check `uv sync --locked` makes, so a stale lock fails here too, with a hint.
    metadata = PACKAGES["tau-adapters"]["metadata"]
    locked = {
        (canonicalize_name(d["name"]), SpecifierSet(d.get("specifier", "")))
        for d in metadata["requires-dist"]
        if "marker" not in d
    }
    declared = {
        (canonicalize_name(r.name), r.specifier) for r in map(Requirement, PROJECT["dependencies"])
    }
    assert locked == declared, "uv.lock is stale: run `make lock` and commit uv.lock"
    assert set(metadata["provides-extras"]) == set(EXTRAS), "uv.lock is stale: run `make lock`"


def test_dev_tools_are_a_uv_group_not_an_extra() -> None:
    assert "dev" not in EXTRAS
    dev = {canonicalize_name(Requirement(r).name) for r in PYPROJECT["dependency-groups"]["dev"]}
    assert {"pytest", "ruff", "mypy", "import-linter", "psutil"} <= dev


def test_entry_points() -> None:
    groups = PROJECT["entry-points"]
    assert groups["tau_adapters"]["a2a"] == "adapters.a2a.adapter:build"
    assert groups["tau_adapters"]["ces"] == "adapters.ces.adapter:build"
    assert groups["tau_adapters"]["decibel"] == "adapters.dialogflow.adapter:build"
    assert groups["tau_adapters.commands"] == {
        name: f"adapters.{name}.harness.cli:app" for name in ("dialogflow", "http", "a2a", "ces")
    }
    assert groups["tau_bench.suites"] == {
        "tau-bench": "tau_bench.suites.tau_bench_v1:SUITE",
        "tau3": "tau_bench.suites.tau3:SUITE",
    }
    assert PROJECT["scripts"]["tau"] == "tau_bench.cli.app:main"


@pytest.mark.parametrize("package", ["tau_adapters", "tau_bench", "adapters"])
def test_packages_are_typed_and_ship_the_marker(package: str) -> None:
    assert (ROOT / package / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"][package]
