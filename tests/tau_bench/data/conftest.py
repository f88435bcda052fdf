"""Fixtures for the data-pull tests: a fake upstream served by respx from local bytes."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
import respx

from tau_bench.data import download as download_module
from tau_bench.data.pinned import PinnedTable, load_pinned
from tests.conftest import DATA_DIR
from tests.tau_bench.data.fake_upstream import table_for, upstream_files

RAW_PATTERN = re.compile(
    r"https://raw\.githubusercontent\.com/(?P<repo>[^/]+/[^/]+)/(?P<commit>[0-9a-f]{40})/(?P<path>.+)"
)


class FakeUpstream:
    """What the fake raw.githubusercontent.com serves, and the requests it saw."""

    def __init__(self, files: dict[str, bytes], commit: str) -> None:
        self.files = files
        self.commit = commit
        self.requested: list[str] = []

    def __call__(self, request: httpx.Request, **groups: str) -> httpx.Response:
        match = RAW_PATTERN.fullmatch(str(request.url))
        assert match, request.url
        self.requested.append(match["path"])
        if match["commit"] != self.commit or match["path"] not in self.files:
            return httpx.Response(404, text="404: Not Found")
        return httpx.Response(200, content=self.files[match["path"]])


@pytest.fixture(scope="session")
def real_table() -> PinnedTable:
    return load_pinned()


@pytest.fixture(scope="session")
def generated_files(real_table: PinnedTable) -> dict[str, bytes]:
    return upstream_files(DATA_DIR, real_table)


@pytest.fixture
def fake_files(generated_files: dict[str, bytes]) -> dict[str, bytes]:
    return dict(generated_files)  # a copy each test may corrupt


@pytest.fixture(scope="session")
def fake_table(generated_files: dict[str, bytes], real_table: PinnedTable) -> PinnedTable:
    return table_for(generated_files, real_table)


@pytest.fixture
def upstream(fake_files: dict[str, bytes], real_table: PinnedTable) -> Iterator[FakeUpstream]:
    server = FakeUpstream(fake_files, real_table.commit)
    with respx.mock(assert_all_called=False) as router:
        router.get(url__regex=RAW_PATTERN.pattern).mock(side_effect=server)
        yield server


@pytest.fixture(autouse=True)
def _no_retry_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(download_module, "RETRY_DELAYS", (0.0, 0.0, 0.0))
