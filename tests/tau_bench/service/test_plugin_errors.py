"""A strategy plug-in that fails to load is a 422 naming it, never a 500 (`POST /runs`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.tau_adapters.plugin_dist import make_plugin_site
from tests.tau_bench.service.conftest import ORACLE

PKG = "evilsvc"
ENTRY_POINTS = f"""[tau_adapters]
evil-missing-attr = {PKG}.good:nope
evil-bad-import = {PKG}.raises:build
evil-syntax = {PKG}.syntax:build
"""


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(make_plugin_site(tmp_path, PKG, ENTRY_POINTS)))
    yield
    for name in [m for m in sys.modules if m == PKG or m.startswith(PKG + ".")]:
        del sys.modules[name]


@pytest.mark.parametrize(
    ("strategy", "words"),
    [
        ("evil-missing-attr", f"({PKG}.good:nope) failed to load: AttributeError"),
        ("evil-bad-import", f"({PKG}.raises:build) failed to load: RuntimeError"),
        ("evil-syntax", f"({PKG}.syntax:build) failed to load: SyntaxError"),
    ],
)
async def test_a_broken_plugin_is_422_naming_it(
    plugins: None, client: httpx.AsyncClient, strategy: str, words: str
) -> None:
    response = await client.post(
        "/runs", json={**ORACLE, "agent_strategy": strategy, "task_ids": [13]}
    )
    assert response.status_code == 422, response.text
    error = response.json()
    assert error["field"] == "agent_strategy"
    assert f"agent strategy {strategy!r}" in error["detail"] and words in error["detail"]
    assert "\x1b" not in error["detail"] and "\n" not in error["detail"]
