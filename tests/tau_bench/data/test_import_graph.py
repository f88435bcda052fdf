"""The data package's modules import each other one way only (paths -> pull -> errors)."""

from __future__ import annotations

import ast
from pathlib import Path

import tau_bench.data

PACKAGE = Path(tau_bench.data.__file__).parent


def _imports(module: str) -> set[str]:
    """Every `tau_bench.data.*` module `module` imports, at top level or inside functions."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found |= {n.rsplit(".", 1)[1] for n in names if n.startswith("tau_bench.data.")}
    return found


def test_no_module_of_the_data_package_is_in_an_import_cycle() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    graph = {m: _imports(m) & modules for m in modules}

    def reaches(start: str, target: str, seen: frozenset[str] = frozenset()) -> bool:
        return any(
            nxt == target or (nxt not in seen and reaches(nxt, target, seen | {nxt}))
            for nxt in graph[start]
        )

    cycles = sorted(m for m in modules if reaches(m, m))
    assert cycles == []


def test_data_dir_error_keeps_its_old_import_path() -> None:
    from tau_bench.data.errors import DataDirError, PullError
    from tau_bench.data.paths import DataDirError as from_paths

    assert from_paths is DataDirError
    assert issubclass(PullError, DataDirError)
