"""What a client writes reaches the server's log and errors as one plain line, and errors
name the client's field, never the server's flags.

Was: a model name with `%0A` forged server log lines and NUL bytes landed in the log; a
failed run's `error` spanned lines; a 260-character model name was refused as
`body: cannot write results in --log-dir results: File name too long` (the pre-run check
named the run after the model, though a server run is named after its id)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import httpx
import pytest

from tau_adapters.registry import SimpleProvider
from tau_bench.agents.oracle import OracleAgent

from .conftest import ORACLE, finished, submit


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"model": 'gpt-4o\nINFO:     127.0.0.1:1 - "DELETE /runs/all HTTP/1.1" 200'}, "model"),
        ({"user_model": "gpt\x00-4o"}, "user_model"),
        ({"provider_limits": {"open\x1bai": 3}}, "provider_limits"),
        ({"task_ids": ["retail/1\r"]}, "task_ids"),
        ({"run_name": "a\u2028b"}, "run_name"),
    ],
)
async def test_control_characters_in_settings_are_422_naming_the_field(
    client: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    response = await client.post("/runs", json={**ORACLE, **body})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    assert "control character" in response.json()["detail"]


async def test_control_characters_in_a_scores_model_are_422(client: httpx.AsyncClient) -> None:
    response = await client.get("/scores", params={"model": "gpt\nx", "subset": "airline"})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "model"


class _Unreachable:
    """A provider whose pre-flight fails with a message of several lines."""

    def __init__(self) -> None:
        self.inner = SimpleProvider(OracleAgent)

    def new_adapter(self) -> Any:
        return self.inner.new_adapter()

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def preflight(self) -> None:
        raise RuntimeError('no answer\nINFO:     127.0.0.1:1 - "DELETE /runs/all HTTP/1.1" 200')


async def test_a_failed_runs_error_and_log_line_are_one_line(
    client: httpx.AsyncClient, register: Any, caplog: pytest.LogCaptureFixture
) -> None:
    def build(options: Mapping[str, Any]) -> Any:
        return _Unreachable()

    register("unreachable", build)
    caplog.set_level(logging.WARNING, logger="tau_bench.service")
    run_id = await submit(client, agent_strategy="unreachable", task_ids=[13])
    view = await finished(client, run_id)
    assert view["status"] == "failed"
    error = view["error"]
    assert "\n" not in error, error
    assert "--" not in error, error  # no flag of `tau run`: a client sets settings
    assert error.startswith("pre-flight failed, no episode was run (skip_preflight to run "), error
    assert "agent unreachable: " in error
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"run {run_id}")]
    assert lines and all("\n" not in line for line in lines), lines


async def test_a_long_model_name_is_no_file_name_problem(client: httpx.AsyncClient) -> None:
    """A server run is named after its id: the model's length is not the files'."""
    run_id = await submit(client, model="m" * 260, task_ids=[13])
    assert (await finished(client, run_id))["status"] == "completed"


async def test_a_huge_start_index_is_422_naming_it(client: httpx.AsyncClient) -> None:
    response = await client.post("/runs", json={**ORACLE, "start_index": -(10**200)})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "start_index"


async def test_a_client_error_never_names_the_servers_flags(client: httpx.AsyncClient) -> None:
    response = await client.post("/runs", json={**ORACLE, "run_name": "r" * 300})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "run_name"
    assert "--log-dir" not in response.json()["detail"]
