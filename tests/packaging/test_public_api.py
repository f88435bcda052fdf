"""The SDK's public surface changes only on purpose (see tests/packaging/snapshot.py)."""

from __future__ import annotations

import json
from typing import Any

import tau_adapters
from tests.packaging.snapshot import SNAPSHOT, UPDATE_COMMAND, describe, public_api, render


def _differences(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    lines = [f"  removed: {name}" for name in sorted(expected.keys() - actual.keys())]
    lines += [f"  added: {name}" for name in sorted(actual.keys() - expected.keys())]
    for name in sorted(expected.keys() & actual.keys()):
        if expected[name] != actual[name]:
            lines.append(f"  changed: {name}\n    was: {expected[name]}\n    now: {actual[name]}")
    return lines


def test_all_is_sorted_unique_and_importable() -> None:
    names = tau_adapters.__all__
    assert len(names) == len(set(names)), "duplicate names in tau_adapters.__all__"
    missing = [name for name in names if not hasattr(tau_adapters, name)]
    assert not missing, f"tau_adapters.__all__ names what the package lacks: {missing}"


def test_public_api_matches_the_snapshot() -> None:
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    actual = json.loads(render(public_api()))
    differences = _differences(expected, actual)
    assert not differences, (
        "the public API of tau_adapters (its __all__) differs from "
        f"{SNAPSHOT.name}:\n"
        + "\n".join(differences)
        + "\nAdapter packages depend on these names and signatures. If the change is on "
        f"purpose, run `{UPDATE_COMMAND}` and commit the rewritten snapshot; otherwise "
        "restore the old surface."
    )


def test_description_tells_a_change_apart() -> None:
    # The check above can fail: a changed signature changes the description.
    def before(session: str, *, retries: int = 0) -> None: ...

    def after(session: str, retries: int = 0) -> None: ...

    assert describe(before) != describe(after)
    assert describe(before)["signature"] == "(session: 'str', *, retries: 'int' = 0) -> 'None'"
