"""A bot that echoes its bearer token and the config's API key back in its messages: the
installed `tau` writes neither into any output (log, τ-bench JSON, summary, report,
MT-bench export)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request

from ...conftest import DATA_DIR

TOKEN = "tok-echo-5f1e9a77c2"
API_KEY = "key-echo-0b8d44e1aa"


def echo_bot() -> FastAPI:
    app = FastAPI()

    @app.post("/chat")
    async def chat(request: Request) -> Any:
        body = await request.json()
        auth = request.headers.get("authorization", "")
        key = request.headers.get("x-api-key", "")
        return {
            "reply": f"I got {auth!r}, key {key} and body key {body.get('key')}",
            "tool_calls": [],
        }

    return app


CONFIG = """\
base_url: {url}
headers:
  Authorization: Bearer ${{BOT_TOKEN}}
  X-Api-Key: ${{BOT_API_KEY}}
session: {{mode: stateless}}
message:
  path: /chat
  body: {{text: "{{{{ message }}}}", key: "${{BOT_API_KEY}}"}}
response: {{messages: reply}}
"""


def _tau(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    tau = Path(sys.executable).parent / "tau"
    return subprocess.run([str(tau), *args], env=env, capture_output=True, text=True, timeout=300)


def test_echoed_secrets_are_redacted_in_every_output(
    tmp_path: Path, serve: Callable[[Any], str]
) -> None:
    url = serve(echo_bot())
    config = tmp_path / "bot.yaml"
    config.write_text(CONFIG.format(url=url))
    out = tmp_path / "out"
    env = {**os.environ, "BOT_TOKEN": TOKEN, "BOT_API_KEY": API_KEY}
    env["TAU_BENCH_DATA"] = str(DATA_DIR)
    run = _tau(
        "run",
        "--env",
        "retail",
        "--agent-strategy",
        "http",
        "--http-config",
        str(config),
        "--user-strategy",
        "scripted",
        "--task-ids",
        "0",
        "--log-dir",
        str(out),
        "--run-name",
        "echo",
        "--quiet",
        env=env,
    )
    assert run.returncode == 0, run.stderr
    log = out / "echo.jsonl"
    assert "I got" in log.read_text()  # the bot did answer, and it was recorded
    report = _tau("report", str(log), "-o", str(tmp_path / "report.html"), env=env)
    assert report.returncode == 0, report.stderr
    export = _tau("export", str(log), "-o", str(tmp_path / "mt"), env=env)
    assert export.returncode == 0, export.stderr
    outputs = [p for p in tmp_path.rglob("*") if p.is_file() and p != config]
    assert len(outputs) >= 4, outputs
    for path in outputs:
        text = path.read_text(errors="replace")
        assert TOKEN not in text, path
        assert API_KEY not in text, path
    for proc in (run, report, export):
        assert TOKEN not in proc.stdout + proc.stderr
        assert API_KEY not in proc.stdout + proc.stderr
