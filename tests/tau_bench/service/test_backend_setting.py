"""`tau serve --backend ray`: where the server's runs execute is the operator's setting,
applied to every run; a request cannot choose it."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tau_bench.cli.app import app as tau_app
from tau_bench.config import RunConfig
from tau_bench.runner.backends import ray as ray_backend
from tau_bench.service import server
from tau_bench.service.guard import ServiceLimits, client_settings
from tau_bench.service.manager import RunManager
from tau_bench.service.settings import ServiceSettings
from tau_bench.service.store import RunRow, RunStore
from tau_bench.service.submission import SubmissionError
from tests.tau_bench.service.conftest import make_settings


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[Any, dict[str, Any]]]:
    calls: list[tuple[Any, dict[str, Any]]] = []

    def capture(app: Any, sock: socket.socket, log_level: str, graceful: float) -> None:
        calls.append((app, {"log_level": log_level}))
        sock.close()

    def start_ray(address: str | None, workers: int, runs: int = 1) -> bool:
        calls.append(("start_ray", {"address": address, "workers": workers, "runs": runs}))
        return False  # as if it were up already: nothing to stop

    monkeypatch.setattr(server, "serve", capture)
    monkeypatch.setattr(ray_backend, "start_ray", start_ray)
    monkeypatch.setenv("TAU_SERVE_STATE_DIR", str(tmp_path / "state"))
    return calls


def serve(*args: str) -> Any:
    return CliRunner().invoke(
        tau_app, ["serve", "--no-auth", "--host", "127.0.0.1", "--port", "0", *args]
    )


def test_the_backend_flags_reach_the_settings(served: list[Any]) -> None:
    result = serve("--backend", "ray", "--ray-address", "ray://head:10001", "--workers", "3")
    assert result.exit_code == 0, result.stderr
    # the cluster is reached before the server answers, for --max-runs runs' workers
    assert served[0] == ("start_ray", {"address": "ray://head:10001", "workers": 3, "runs": 2})
    settings = served[1][0].state.settings
    assert settings.run_backend() == {
        "backend": "ray",
        "ray_address": "ray://head:10001",
        "workers": 3,
    }


def test_a_bad_backend_is_one_line(served: list[Any]) -> None:
    result = serve("--backend", "spark")
    assert result.exit_code == 2 and served == []
    assert result.stderr == "error: --backend: unknown backend 'spark' (local or ray)\n"
    with pytest.raises(ValueError, match="workers"):
        ServiceSettings(state_dir=Path("."), token=None, workers=0)


def test_every_run_gets_the_servers_backend_and_a_request_cannot_choose(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, backend="ray", workers=2)
    settings.prepare()
    manager = RunManager(settings, RunStore(settings.db_path))
    config = RunConfig(env="airline", agent_strategy="oracle", user_strategy="scripted")
    row = RunRow(
        id="run1",
        status="queued",
        origin="api",
        created="now",
        run_name="r",
        config=config.model_dump(),
    )
    run = manager._config(row)
    assert (run.backend, run.workers, run.ray_address) == ("ray", 2, None)
    for key in ("backend", "ray_address", "workers"):
        with pytest.raises(SubmissionError) as info:
            client_settings({"env": "airline", key: "x"}, {}, ServiceLimits())
        assert info.value.field == key
