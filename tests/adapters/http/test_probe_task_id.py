"""Which task a session plays: `tau http check --probe --task-id` names one, and the
reference bot reads `task_id` as a task's index, null as no task, and anything else as a
422 saying what it expects (never Python's `int()` message)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request
from typer.testing import CliRunner

from adapters.http.harness import cli
from adapters.http.harness.reference_bot import create_bot_app, task_index
from tau_bench.cli.errors import UserError
from tests.conftest import DATA_DIR

RETAIL_TEST = 115  # tasks in retail/test


@pytest.fixture(scope="module")
def oracle_bot() -> Any:
    return create_bot_app(data_dir=DATA_DIR)


def _start(url: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{url}/sessions", json=body, timeout=60)


@pytest.mark.parametrize(
    ("raw", "expected"), [(None, None), ("", None), (0, 0), ("7", 7), (" 114 ", 114)]
)
def test_a_task_index_is_a_number_or_digits_and_null_is_no_task(raw: Any, expected: Any) -> None:
    assert task_index(raw, RETAIL_TEST, "retail/test") == expected


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("probe", "got 'probe'"),
        (-1, "got -1"),
        (1.5, "got 1.5"),
        (True, "got True"),
        ({"id": 1}, "got a JSON dict"),
        ("١", "got '١'"),  # a digit, but not an ASCII one
    ],
)
def test_anything_else_says_what_is_expected(raw: Any, shown: str) -> None:
    with pytest.raises(ValueError) as info:
        task_index(raw, RETAIL_TEST, "retail/test")
    assert str(info.value) == (
        f"task_id must be the index of a task of retail/test (0 to 114), or null for no task; "
        f"{shown}"
    )


@pytest.mark.parametrize("raw", [115, "9" * 5000])
def test_an_index_past_the_split_is_out_of_range(raw: Any) -> None:
    with pytest.raises(
        ValueError, match=r"^task_id \d+.* out of range for retail/test \(0 to 114\)$"
    ):
        task_index(raw, RETAIL_TEST, "retail/test")


def test_the_reference_bot_answers_an_unknown_task_id_with_a_clear_422(
    serve: Callable[[Any], str], oracle_bot: Any
) -> None:
    url = serve(oracle_bot)
    refused = _start(url, {"domain": "retail", "task_id": "probe"})
    assert refused.status_code == 422
    assert refused.json() == {
        "detail": "task_id must be the index of a task of retail/test (0 to 114), or null "
        "for no task; got 'probe'"
    }
    # No task: the session starts, but the oracle has nothing to replay and says so.
    started = _start(url, {"domain": "retail", "task_id": None})
    session = started.json()["session_id"]
    said = httpx.post(f"{url}/sessions/{session}/messages", json={"text": "Hi"}, timeout=60)
    assert said.status_code == 422
    assert "named no task_id" in said.json()["detail"]
    # A task as digits, as `--task-id 0` or a template sends it.
    played = _start(url, {"domain": "retail", "task_id": "0"})
    session = played.json()["session_id"]
    said = httpx.post(f"{url}/sessions/{session}/messages", json={"text": "Hi"}, timeout=60)
    assert said.json()["tool_calls"][0]["name"] == "find_user_id_by_name_zip"


def _config(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "bot.yaml"
    path.write_text(f"preset: generic-json\nbase_url: {url}\nheaders: null\n")
    return path


def test_check_probe_names_the_task_given_with_task_id(
    serve: Callable[[Any], str], oracle_bot: Any, tmp_path: Path
) -> None:
    config = _config(tmp_path, serve(oracle_bot))
    result = CliRunner().invoke(cli.app, ["check", str(config), "--probe", "--task-id", "0"])
    assert result.exit_code == 0, result.output
    assert "tool call : find_user_id_by_name_zip(" in result.output


def test_check_probe_without_a_task_names_none(
    serve: Callable[[Any], str], oracle_bot: Any, tmp_path: Path
) -> None:
    config = _config(tmp_path, serve(oracle_bot))
    result = CliRunner().invoke(cli.app, ["check", str(config), "--probe", "--message", "Hi"])
    assert isinstance(result.exception, UserError)
    message = str(result.exception)
    assert message.startswith("probe failed (protocol_error): HTTP bot rejected the request: 422")
    # The session started (null is no task); the oracle could not play it.
    assert "/messages" in message and "named no task_id" in message
    assert "int()" not in message


def _recording_bot(starts: list[Any]) -> FastAPI:
    """A generic-json bot that keeps each session start's body and answers "ok"."""
    bot = FastAPI()

    @bot.post("/sessions")
    async def start(request: Request) -> dict[str, str]:
        starts.append(await request.json())
        return {"session_id": "s1"}

    @bot.post("/sessions/s1/messages")
    async def message() -> dict[str, list[str]]:
        return {"messages": ["ok"]}

    @bot.delete("/sessions/s1")
    async def end() -> dict[str, bool]:
        return {"deleted": True}

    return bot


@pytest.mark.parametrize(
    ("args", "sent"),
    [([], None), (["--task-id", "7"], 7), (["--task-id", "greeting"], "greeting")],
)
def test_the_probe_sends_the_task_id_as_a_run_would(
    serve: Callable[[Any], str], tmp_path: Path, args: list[str], sent: Any
) -> None:
    starts: list[Any] = []
    config = _config(tmp_path, serve(_recording_bot(starts)))
    result = CliRunner().invoke(cli.app, ["check", str(config), "--probe", *args])
    assert result.exit_code == 0, result.output
    assert starts[0]["task_id"] == sent  # a number, as in a run; null without --task-id
