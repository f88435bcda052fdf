"""Config features met on day one: `tojson` in templates (a Rasa bot wanting each tool
result as a JSON string message), SSE deltas grouped by a key, the docs' SSE example as
written, `extends:`, suggestions for unknown keys, whole JMESPath errors, `--probe`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from adapters.http.adapter import HttpProvider
from adapters.http.config import ConfigError
from adapters.http.config_load import load_config
from adapters.http.templates import render
from tau_bench.episode import run_task
from tau_bench.users.scripted import ScriptedUser

from .conftest import TOY_TASK, make_toy_domain

DOCS = Path(__file__).resolve().parents[3] / "docs" / "http-adapter.md"


# -- tojson -----------------------------------------------------------------------------


def test_tojson_escapes_a_value_inside_a_string() -> None:
    variables = {"tool_result": {"tool_call_id": "c1", "content": 'say "hi"\n\\ok'}}
    template = (
        '{"tool_result": {"id": {{ tool_result.tool_call_id | tojson }}, '
        '"output": {{ tool_result.content|tojson }}}}'
    )
    text = render(template, variables)
    assert json.loads(text) == {"tool_result": {"id": "c1", "output": 'say "hi"\n\\ok'}}
    assert render("{{ tool_result | tojson }}", variables) == json.dumps(
        variables["tool_result"], separators=(",", ":")
    )


def test_an_unknown_filter_is_a_config_error() -> None:
    cfg = {
        "base_url": "http://x",
        "message": {"body": {"m": "{{ message | upper }}"}},
        "response": {"messages": "a"},
    }
    with pytest.raises(ConfigError, match=r"message: unknown template filter 'upper'"):
        load_config(cfg, environ={})


def rasa_json_bot(seen: list[Any]) -> FastAPI:
    """Wants each tool result as a message holding JSON: {"tool_result": {id, output}}."""
    app = FastAPI()

    @app.post("/webhooks/rest/webhook")
    async def webhook(request: Request) -> Any:
        body = await request.json()
        text = body["message"]
        if text.startswith("{"):
            result = json.loads(text)["tool_result"]  # fails on a badly built message
            seen.append(result)
            return [{"text": f"The note record is {result['output']}"}]
        return [{"custom": {"tool_call": {"id": "c1", "name": "get_note", "arguments": {}}}}]

    return app


async def test_a_rasa_bot_gets_each_tool_result_as_a_json_string(
    serve: Callable[[Any], str],
) -> None:
    seen: list[Any] = []
    url = serve(rasa_json_bot(seen))
    cfg = {
        "preset": "rasa-rest",
        "base_url": url,
        "tool_results": {
            "mode": "each",
            "body": {
                "sender": "{{ bot_session_id }}",
                "message": (
                    '{"tool_result": {"id": {{ tool_result.tool_call_id | tojson }}, '
                    '"output": {{ tool_result.content | tojson }}}}'
                ),
                "metadata": None,
            },
        },
    }
    provider = HttpProvider(load_config(cfg, environ={}))
    scored = await run_task(make_toy_domain(), TOY_TASK, 0, provider.new_adapter(), ScriptedUser())
    await provider.aclose()
    assert scored.result.error is None, scored.result.error
    # get_note without user_id: the observation is an error text; either way it has quotes
    # or not, the bot parsed the message and got the observation back verbatim.
    tool_msgs = [m for m in scored.result.messages if m["role"] == "tool"]
    assert seen == [{"id": "c1", "output": tool_msgs[0]["content"]}]


# -- SSE grouping and the docs example --------------------------------------------------


def sse_bot(events: list[str]) -> FastAPI:
    app = FastAPI()

    @app.post("/stream")
    async def stream(request: Request) -> Any:
        async def gen() -> Any:
            yield ": keep-alive\n\n"
            for data in events:
                yield f"data: {data}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(gen(), media_type="text/event-stream")

    return app


def _docs_yaml(marker: str) -> dict[str, Any]:
    """The YAML block of docs/http-adapter.md that contains `marker`."""
    for block in re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), re.S):
        if marker in block:
            return dict(yaml.safe_load(block))
    raise AssertionError(f"no yaml block with {marker!r} in {DOCS}")


TWO_MESSAGES = [
    json.dumps({"type": "text", "message_id": "m1", "delta": "Hello, "}),
    json.dumps({"type": "text", "message_id": "m2", "delta": "second "}),
    json.dumps({"type": "text", "message_id": "m1", "delta": "Ann."}),
    json.dumps({"type": "text", "message_id": "m2", "delta": "message."}),
    json.dumps({"type": "end"}),
]


async def _sse_turn(url: str, response: dict[str, Any]) -> Any:
    cfg = {
        "base_url": url,
        "session": {"mode": "stateless"},
        "message": {"path": "/stream", "stream": "sse", "body": {"m": "{{ message }}"}},
        "response": response,
    }
    provider = HttpProvider(load_config(cfg, environ={}))
    scored = await run_task(make_toy_domain(), TOY_TASK, 0, provider.new_adapter(), ScriptedUser())
    await provider.aclose()
    return scored.result


async def test_docs_sse_example_works_as_written(serve: Callable[[Any], str]) -> None:
    response = _docs_yaml("join('', [?type=='text'].delta)")["response"]
    result = await _sse_turn(serve(sse_bot(TWO_MESSAGES)), response)
    assert result.error is None, result.error
    said = [m["content"] for m in result.messages if m["role"] == "assistant"]
    assert said == ["Hello, second Ann.message."]
    assert result.stop_reason == "agent_end"


async def test_docs_sse_grouping_example_gives_one_message_per_id(
    serve: Callable[[Any], str],
) -> None:
    response = _docs_yaml("group_by: message_id")["response"]
    result = await _sse_turn(serve(sse_bot(TWO_MESSAGES)), response)
    assert result.error is None, result.error
    said = [m["content"] for m in result.messages if m["role"] == "assistant"]
    assert said == ["Hello, Ann.\nsecond message."]


# -- extends, suggestions, JMESPath errors ----------------------------------------------


def test_extends_merges_another_file(tmp_path: Path) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "common.yaml").write_text(
        "base_url: http://bot.example\n"
        "headers: {X-Team: blue, X-Drop: gone}\n"
        "message: {path: /chat, body: {text: '{{ message }}'}}\n"
        "response: {messages: reply}\n"
    )
    child = tmp_path / "bot.yaml"
    child.write_text(
        "extends: base/common.yaml\nheaders: {X-Drop: null, X-More: 'yes'}\ntimeout: 7\n"
    )
    cfg = load_config(child, environ={}).config
    assert cfg.base_url == "http://bot.example" and cfg.message.path == "/chat"
    assert cfg.headers == {"X-Team": "blue", "X-More": "yes"}
    assert cfg.timeouts.total == 7


def test_extends_cycles_and_missing_files_are_errors(tmp_path: Path) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("extends: b.yaml\n")
    b.write_text("extends: a.yaml\n")
    with pytest.raises(ConfigError, match="a cycle"):
        load_config(a, environ={})
    a.write_text("extends: nowhere.yaml\n")
    with pytest.raises(ConfigError, match=r"cannot read HTTP bot config .*nowhere\.yaml"):
        load_config(a, environ={})


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        ({"mesage": {}}, "mesage: unknown key (did you mean 'message'?)"),
        ({"retry": {"max_attempt": 3}}, "retry.max_attempt: unknown key (did you mean "),
        ({"response": {"messages": "a", "tool_cals": "b"}}, "(did you mean 'tool_calls'?)"),
        ({"timeout": {"totl": 3}}, "timeout.totl: unknown key (did you mean 'total'?)"),
    ],
)
def test_an_unknown_key_suggests_the_closest(over: dict[str, Any], expected: str) -> None:
    cfg: dict[str, Any] = {
        "base_url": "http://x",
        "message": {},
        "response": {"messages": "a"},
        **over,
    }
    with pytest.raises(ConfigError) as info:
        load_config(cfg, environ={})
    assert expected in str(info.value)


def test_a_jmespath_error_shows_the_whole_message() -> None:
    cfg = {
        "base_url": "http://x",
        "message": {},
        "response": {"messages": "join('', [?type=='text'].delta"},
    }
    with pytest.raises(ConfigError) as info:
        load_config(cfg, environ={})
    message = str(info.value)
    assert "\n" not in message
    assert "response.messages: invalid JMESPath" in message
    assert "incomplete expression" in message
    assert "at column 31: join('', [?type=='text'].delta<HERE>" in message


# -- tau http check --probe -------------------------------------------------------------


def probe_bot() -> FastAPI:
    app = FastAPI()

    @app.post("/chat")
    async def chat(request: Request) -> Any:
        return {
            "reply": "Hi \x1b[2Jthere",
            "calls": [{"id": "t1", "name": "get_order_details", "arguments": {"order_id": "#1"}}],
        }

    return app


def test_check_probe_sends_one_message_and_shows_the_turn(
    tmp_path: Path, serve: Callable[[Any], str]
) -> None:
    url = serve(probe_bot())
    config = tmp_path / "bot.yaml"
    config.write_text(
        f"base_url: {url}\nheaders: {{Authorization: 'Bearer ${{PROBE_TOKEN}}'}}\n"
        "message: {path: /chat, body: {text: '{{ message }}'}}\n"
        "response: {messages: reply, tool_calls: calls}\n"
        "retry: {max_attempts: 2, backoff_initial: 0.01}\n"
    )
    tau = Path(sys.executable).parent / "tau"
    env = {**os.environ, "PROBE_TOKEN": "probe-secret-1234"}
    proc = subprocess.run(
        [str(tau), "http", "check", str(config), "--probe", "--message", "hello"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "probe: sent 'hello'" in out
    assert "POST " in out and "/chat -> 200" in out
    assert "message   : Hi \\x1b[2Jthere" in out and "\x1b" not in out
    assert 'tool call : get_order_details({"order_id": "#1"}) id=t1' in out
    assert "probe-secret-1234" not in out + proc.stderr

    config.write_text(config.read_text().replace(url, "http://127.0.0.1:9"))
    down = subprocess.run(
        [str(tau), "http", "check", str(config), "--probe"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert down.returncode == 2
    assert "Traceback" not in down.stderr
    assert len(down.stderr.strip().splitlines()) == 1
    assert "probe failed (adapter_error): cannot reach the HTTP bot" in down.stderr
