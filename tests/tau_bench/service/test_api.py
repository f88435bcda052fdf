"""The API through httpx's ASGI transport: submit, poll, files, cancel, queue, errors."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.tau_bench.service.conftest import (
    AUTH,
    ORACLE,
    Gate,
    finished,
    make_settings,
    reached,
    running_app,
    submit,
)


def jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


async def test_submit_poll_and_fetch_everything(client: httpx.AsyncClient, tmp_path: Path) -> None:
    response = await client.post(
        "/runs", json={**ORACLE, "task_ids": [13, 0, 1], "num_trials": 2, "max_concurrency": 2}
    )
    assert response.status_code == 202
    run_id = response.json()["run_id"]
    assert response.headers["location"] == f"/runs/{run_id}"

    view = await finished(client, run_id)
    assert view["status"] == "completed", view
    assert view["progress"] == {"total": 6, "done": 6, "scored": 6, "errors": 0, "passed": 6}
    summary = view["summary"]
    assert summary["pass_hat_k"] == {"1": 1.0, "2": 1.0}
    assert summary["episodes_planned"] == 6 and summary["avg_reward"] == 1.0
    assert view["config"]["task_ids"] == [13, 0, 1]
    assert "log_dir" not in view["config"] and "files" not in summary
    # The runner's own files are under the state directory.
    run_dir = tmp_path / "state" / "runs" / run_id
    assert {p.suffix for p in run_dir.iterdir()} >= {".jsonl", ".json"}

    listed = (await client.get("/runs")).json()["runs"]
    assert [r["run_id"] for r in listed] == [run_id]
    assert (await client.get("/runs", params={"status": "queued"})).json()["runs"] == []

    scores = await client.get(f"/runs/{run_id}/scores")
    assert scores.status_code == 200
    assert scores.headers["content-type"].startswith("application/x-ndjson")
    lines = jsonl(scores.text)
    assert [s["task-id"] for s in lines] == [
        "task-0", "task-0", "task-1", "task-1", "task-13", "task-13"
    ]  # fmt: skip
    assert all(
        list(s) == ["task-id", "prompt", "result", "truth", "score", "duration"] for s in lines
    )
    assert all(s["score"] == 1.0 for s in lines)
    task13 = next(s for s in lines if s["task-id"] == "task-13")
    assert task13["result"] == task13["truth"]
    assert task13["truth"].startswith("transfer_to_human_agents(")
    assert "james_lee_6136" in task13["prompt"]

    trajectory = await client.get(f"/runs/{run_id}/trajectories/13")
    assert trajectory.status_code == 200
    chat = jsonl(trajectory.text)
    assert chat[0]["role"] == "system" and {m["role"] for m in chat} >= {"user", "assistant"}
    assert any("transfer_to_human_agents(" in m["content"] for m in chat)
    second = await client.get(f"/runs/{run_id}/trajectories/13", params={"trial": 1})
    assert second.status_code == 200
    missing = await client.get(f"/runs/{run_id}/trajectories/7")
    assert missing.status_code == 404 and "task 7" in missing.json()["detail"]

    report = await client.get(f"/runs/{run_id}/report")
    assert report.status_code == 200
    assert report.headers["content-type"].startswith("text/html")
    assert report.text.startswith("<!DOCTYPE html>") and run_id in report.text


async def test_health_is_open_and_everything_else_needs_the_token(
    client: httpx.AsyncClient,
) -> None:
    run_id = await submit(client, task_ids=[13])
    await finished(client, run_id)
    health = await client.get("/health", headers={"Authorization": ""})
    assert health.status_code == 200 and health.json()["status"] == "ok"
    routes = [
        ("GET", "/runs"),
        ("POST", "/runs"),
        ("GET", f"/runs/{run_id}"),
        ("DELETE", f"/runs/{run_id}"),
        ("POST", f"/runs/{run_id}/resume"),
        ("GET", f"/runs/{run_id}/scores"),
        ("GET", f"/runs/{run_id}/trajectories/13"),
        ("GET", f"/runs/{run_id}/report"),
        ("GET", "/scores?model=m&subset=airline&taskID=13"),
    ]
    for headers in ({}, {"Authorization": "Bearer wrong-token"}, {"Authorization": AUTH["Authorization"].replace("Bearer", "Basic")}):  # fmt: skip
        for method, url in routes:
            async with httpx.AsyncClient(
                transport=client._transport, base_url="http://service", headers=headers
            ) as anonymous:
                response = await anonymous.request(method, url, json=ORACLE)
            assert response.status_code == 401, (method, url, headers)
            assert response.headers["www-authenticate"] == "Bearer"
            assert response.json()["detail"] == "missing or invalid bearer token"
    # Nothing was submitted or cancelled by the refused requests.
    runs = (await client.get("/runs")).json()["runs"]
    assert [(r["run_id"], r["status"]) for r in runs] == [(run_id, "completed")]


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"bogus": 1}, "bogus", "unknown setting"),
        ({"num_trials": "many"}, "num_trials", "integer"),
        ({"num_trials": 0}, "num_trials", "greater than or equal to 1"),
        ({"max_concurrency": -1}, "max_concurrency", "greater than or equal to 1"),
        ({"log_dir": "/tmp/x"}, "log_dir", "set by the server"),
        ({"log-dir": "/tmp/x"}, "log_dir", "set by the server"),
        ({"data_dir": "/etc"}, "data_dir", "set by the server"),
        ({"resume": "/tmp/x.jsonl"}, "resume", "set by the server"),
        ({"env": "banking"}, "env", "unknown env 'banking'"),
        ({"task_ids": [999]}, "task_ids", "out of range"),
        ({"task_split": "holdout"}, "task_split", "unknown task split"),
        ({"agent_strategy": "nope"}, "agent_strategy", "unknown agent strategy 'nope'"),
        ({"user_strategy": "nope"}, "user_strategy", "unknown user strategy 'nope'"),
        ({"user_strategy": "human"}, "user_strategy", "needs a terminal"),
        ({"agent_strategy": "tool-calling"}, "model", "required by agent strategy"),
        ({"run_name": "../escape"}, "run_name", "letters, digits"),
        ({"provider_limits": {"openai": 0}}, "provider_limits", "at least 1"),
        ({"agent_options": 3}, "agent_options", "set by the server's operator"),
    ],
)
async def test_bad_settings_are_422_naming_the_field(
    client: httpx.AsyncClient, body: dict[str, Any], field: str, words: str
) -> None:
    response = await client.post("/runs", json={**ORACLE, "task_ids": [13], **body})
    assert response.status_code == 422, response.text
    error = response.json()
    assert error["field"] == field
    assert error["detail"].startswith(f"{field}: ") and words in error["detail"], error
    assert (await client.get("/runs")).json()["runs"] == []


@pytest.mark.parametrize(
    ("content", "words"),
    [(b"{not json", "not valid JSON"), (b"[1, 2]", "JSON object"), (b"", "JSON object")],
)
async def test_a_body_that_is_not_a_json_object_is_422(
    client: httpx.AsyncClient, content: bytes, words: str
) -> None:
    response = await client.post(
        "/runs", content=content, headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert response.json()["field"] == "body" and words in response.json()["detail"]


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("/runs?status=sleeping", "status"),
        ("/runs?limit=0", "limit"),
        ("/runs/RUN?wait=-1", "wait"),
        ("/runs/RUN/trajectories/13?trial=-1", "trial"),
        ("/scores?subset=airline", "model"),
        ("/scores?model=m", "subset"),
        ("/scores?model=m&subset=airline&taskID=abc", "taskID"),
        ("/scores?model=m&subset=banking", "subset"),
        ("/scores?model=m&subset=airline&taskID=999", "taskID"),
    ],
)
async def test_bad_query_parameters_are_422_naming_them(
    client: httpx.AsyncClient, url: str, field: str
) -> None:
    run_id = await submit(client, task_ids=[13])
    response = await client.get(url.replace("RUN", run_id))
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    assert response.json()["detail"].startswith(f"{field}: ")


async def test_unknown_run_is_404(client: httpx.AsyncClient) -> None:
    for method, url in [
        ("GET", "/runs/nope"),
        ("DELETE", "/runs/nope"),
        ("POST", "/runs/nope/resume"),
        ("GET", "/runs/nope/scores"),
        ("GET", "/runs/nope/trajectories/1"),
        ("GET", "/runs/nope/report"),
    ]:
        response = await client.request(method, url)
        assert response.status_code == 404, (method, url)
        assert response.json()["detail"] == "no run 'nope'"


async def test_secrets_never_come_back(tmp_path: Path, failing: None) -> None:
    key, bearer = "sk-live-0123456789abcdef", "zz-header-secret-987654"
    registered = {  # options only the operator may give (tau_bench.service.guard)
        "agent_strategy": "failing",
        "agent_options": {
            "api_key": key,
            "headers": {"Authorization": f"Bearer {bearer}"},
            "timeout": 5,
        },
    }
    settings = make_settings(tmp_path / "state", agent_configs={"failing": registered})
    async with running_app(settings) as client:
        await _secrets_never_come_back(client, key, bearer)


async def _secrets_never_come_back(client: httpx.AsyncClient, key: str, bearer: str) -> None:
    response = await client.post(
        "/runs",
        json={**ORACLE, "agent_strategy": "failing", "agent_config": "failing", "task_ids": [13]},
    )
    assert response.status_code == 202
    view = await finished(client, response.json()["run_id"])
    assert view["status"] == "failed"
    assert "the endpoint refused api key ***" in view["error"]
    # The operator's options stay on the server (redaction of options shown otherwise:
    # test_views_redaction): the run names its registered config.
    assert view["config"]["agent_config"] == "failing"
    assert "agent_options" not in view["config"]
    for url in ("/runs", f"/runs/{view['run_id']}"):
        text = (await client.get(url)).text
        assert key not in text and bearer not in text


async def test_the_log_gives_a_configuration_problem_one_line_and_a_fault_its_traceback(
    tmp_path: Path,
    failing: None,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registered = {"agent_strategy": "failing", "agent_options": {"api_key": "sk-live-55556666"}}
    settings = make_settings(tmp_path / "state", agent_configs={"failing": registered})
    caplog.set_level(logging.WARNING, logger="tau_bench.service")
    async with running_app(settings) as client:
        body = {**ORACLE, "agent_strategy": "failing", "agent_config": "failing", "task_ids": [1]}
        response = await client.post("/runs", json=body)
        assert (await finished(client, response.json()["run_id"]))["status"] == "failed"
        [record] = [r for r in caplog.records if "failed:" in r.getMessage()]
        assert record.getMessage().count("\n") == 0, record.getMessage()
        assert "agent strategy 'failing'" in record.getMessage()
        assert "sk-live-55556666" not in record.getMessage()

        caplog.clear()

        async def fault(*args: Any, **kwargs: Any) -> None:
            raise RuntimeError("a bug in the harness")

        monkeypatch.setattr("tau_bench.runner.Runner.run", fault)
        response = await client.post("/runs", json={**ORACLE, "task_ids": [1]})
        view = await finished(client, response.json()["run_id"])
        assert view["error"] == "RuntimeError: a bug in the harness"
        [record] = [r for r in caplog.records if "failed:" in r.getMessage()]
        assert "Traceback (most recent call last)" in record.getMessage()


async def test_cancel_a_running_run_then_resume_it(client: httpx.AsyncClient, gate: Gate) -> None:
    run_id = await submit(client, agent_strategy="gated", task_ids=[13, 0, 1])
    await reached(gate)  # task 13 is done, task 0 is in flight

    response = await client.delete(f"/runs/{run_id}")
    assert response.status_code == 200
    view = response.json()
    assert view["status"] == "cancelled"
    assert view["progress"]["done"] == 1 and view["summary"]["interrupted"] is True
    assert [s["task-id"] for s in jsonl((await client.get(f"/runs/{run_id}/scores")).text)] == [
        "task-13"
    ]
    again = await client.delete(f"/runs/{run_id}")
    assert again.status_code == 409 and "already cancelled" in again.json()["detail"]

    gate.release.set()
    resumed = await client.post(f"/runs/{run_id}/resume")
    assert resumed.status_code == 202
    view = await finished(client, run_id)
    assert view["status"] == "completed", view
    assert view["progress"]["passed"] == 3 and view["attempts"] == 2
    assert view["summary"]["episodes_run_now"] == 2  # task 13 was not run again
    assert gate.started == [13, 0, 0, 1]
    conflict = await client.post(f"/runs/{run_id}/resume")
    assert conflict.status_code == 409


async def test_runs_beyond_max_runs_wait_in_the_queue(tmp_path: Path, gate: Gate) -> None:
    async with running_app(make_settings(tmp_path, max_runs=1)) as client:
        first = await submit(client, agent_strategy="gated", task_ids=[0])
        await reached(gate)
        second = await submit(client, task_ids=[13])
        third = await submit(client, task_ids=[1])
        queued = (await client.get("/runs", params={"status": "queued"})).json()["runs"]
        assert {r["run_id"] for r in queued} == {second, third}
        assert (await client.get(f"/runs/{first}")).json()["status"] == "running"
        report = await client.get(f"/runs/{second}/report")
        assert report.status_code == 404

        cancelled = await client.delete(f"/runs/{second}")
        assert cancelled.json()["status"] == "cancelled"
        assert cancelled.json()["started"] is None

        gate.release.set()
        assert (await finished(client, first))["status"] == "completed"
        assert (await finished(client, third))["status"] == "completed"
        assert (await client.get(f"/runs/{second}")).json()["status"] == "cancelled"


async def test_a_running_run_shows_live_progress(client: httpx.AsyncClient, gate: Gate) -> None:
    run_id = await submit(client, agent_strategy="gated", task_ids=[13, 0])
    await reached(gate)
    view = (await client.get(f"/runs/{run_id}")).json()
    assert view["status"] == "running"
    assert view["progress"] == {"total": 2, "done": 1, "scored": 1, "errors": 0, "passed": 1}
    assert view["summary"]["pass_hat_k"] == {"1": 1.0}
    partial = jsonl((await client.get(f"/runs/{run_id}/scores")).text)
    assert [s["task-id"] for s in partial] == ["task-13"]
    gate.release.set()
    assert (await finished(client, run_id))["progress"]["done"] == 2
