"""Smaller things a probe found: the state directory's mode, a 429 without Retry-After, a
404 that echoed a 70 KB id, a token no client could send."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tau_bench.service.settings import ServiceLimits

from .conftest import Gate, make_settings, reached, running_app, submit


def test_an_existing_state_directory_keeps_its_mode(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    make_settings(shared).prepare()
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755  # was chmod-ed to 0700
    fresh = tmp_path / "fresh" / "state"
    make_settings(fresh).prepare()
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o700


def test_a_world_writable_state_directory_is_refused(tmp_path: Path) -> None:
    public = tmp_path / "public"
    public.mkdir()
    public.chmod(0o1777)
    with pytest.raises(PermissionError, match="writable by every user"):
        make_settings(public).prepare()
    assert stat.S_IMODE(public.stat().st_mode) == 0o1777


@pytest.mark.parametrize("token", ["tökenÜ-0123456789abcdef", "two words 0123456789abcdef"])
def test_a_token_no_header_can_carry_is_refused(tmp_path: Path, token: str) -> None:
    with pytest.raises(ValueError, match="printable ASCII"):
        make_settings(tmp_path, token=token)


def test_tau_serve_refuses_such_a_token_in_one_line(tmp_path: Path) -> None:
    """Through the installed `tau`: the settings' ValueError was a traceback."""
    env = {**os.environ, "TAU_SERVE_TOKEN": "tökenÜ-0123456789abcdef"}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "tau"), "serve", "--port", "0",
         "--state-dir", str(tmp_path / "state")],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: the API token must be printable ASCII without spaces (clients send it in "
        "an HTTP header)"
    ]


async def test_an_unknown_long_id_is_not_echoed_whole(client: httpx.AsyncClient) -> None:
    response = await client.get("/runs/" + "a" * 60_000)
    assert response.status_code == 404
    assert len(response.text) < 200


async def test_a_429_says_when_to_retry(tmp_path: Path, gate: Gate) -> None:
    settings = make_settings(
        tmp_path / "state", max_runs=1, limits=ServiceLimits(max_unfinished_runs=1)
    )
    async with running_app(settings) as client:
        await submit(client, agent_strategy="gated", task_ids=[0])
        await reached(gate)
        refused = await client.post("/runs", json={"env": "airline"})
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "5"
        gate.release.set()
