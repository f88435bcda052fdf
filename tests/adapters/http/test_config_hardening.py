"""Bad bot configs and odd bot replies: each bad config is one line naming the file and
key (exit 2 from the installed `tau`), never a traceback, a hang or an echoed secret; a
reply that makes a mapping expression fail is the bot's protocol error (agent_failure),
and a request that is not valid HTTP is never retried as a connection problem."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters.http.adapter import HttpProvider
from adapters.http.config import ConfigError, RetryConfig
from adapters.http.config_load import load_config
from adapters.http.mapping import MappingError, map_reply
from adapters.http.transport import call_with_retries
from tau_adapters.protocol import AdapterConfigError, SessionContext, UserTurn
from tau_bench.episode import run_task
from tau_bench.error_classes import AGENT_FAILURE, classify
from tau_bench.users.scripted import ScriptedUser

from ...conftest import DATA_DIR
from .conftest import TOY_TASK, make_toy_domain
from .hostile import hostile_server, reply

TAU = Path(sys.executable).parent / "tau"
SECRET = "sk-live-SUPERSECRET123"

MINIMAL: dict[str, Any] = {
    "base_url": "http://bot.test",
    "message": {"path": "/chat", "body": {"text": "{{ message }}"}},
    "response": {"messages": "reply"},
}
MINIMAL_YAML = (
    "base_url: http://bot.test\n"
    'message: {path: /chat, body: {text: "{{ message }}"}}\n'
    "response: {messages: reply}\n"
)


def _with(**over: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = json.loads(json.dumps(MINIMAL))
    cfg.update(over)
    return cfg


def _load_error(cfg: Any, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(cfg, environ=environ or {})
    message = str(info.value)
    assert "\n" not in message, message
    return message


def _tau(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), **(env or {})}
    # A bound, not synchronisation: a regression that hangs fails instead of stalling.
    return subprocess.run([str(TAU), *args], env=full, capture_output=True, text=True, timeout=120)


def _one_line(proc: subprocess.CompletedProcess[str], *expected: str) -> str:
    err = proc.stderr.strip()
    assert proc.returncode == 2, (proc.returncode, proc.stdout, err)
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for text in expected:
        assert text in err, err
    return err


# -- the installed `tau http check`, where users meet these ----------------------------

DEEP_YAML = "base_url: http://x\nmessage: {body: " + "[" * 1000 + "]" * 1000 + "}\n"
BOMB_YAML = (
    "base_url: http://x\nmessage:\n  body:\n"
    '    a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]\n'
    + "".join(f"    a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9))
    + "response: {messages: reply}\n"
)
CLI_CASES: list[tuple[str, bytes, dict[str, str], list[str]]] = [
    # 1. a timeout of 0 or less
    ("t0.yaml", (MINIMAL_YAML + "timeout: 0\n").encode(), {}, ["t0.yaml: timeout: must be"]),
    ("tneg.yaml", (MINIMAL_YAML + "timeout: -1\n").encode(), {}, ["tneg.yaml: timeout: must"]),
    # 2. an illegal header name
    (
        "hdr.yaml",
        (MINIMAL_YAML + 'headers: {"Bad Header": v}\n').encode(),
        {},
        ["hdr.yaml: headers: 'Bad Header' is not a valid header name"],
    ),
    # 4. a secret variable quoted back in an error
    (
        "url.yaml",
        MINIMAL_YAML.replace(
            "http://bot.test", '"https//bot.example.com/v1?api_key=${BOT_API_KEY}"'
        ).encode(),
        {"BOT_API_KEY": SECRET},
        ["url.yaml: base_url: must be an http:// or https:// URL", "api_key=***"],
    ),
    # 5. an alias bomb
    ("bomb.yaml", BOMB_YAML.encode(), {}, ["bomb.yaml: message.body: more than 100,000 values"]),
    # 6. nesting: JSON, YAML, JMESPath
    (
        "deep.json",
        b'{"base_url": "http://x", "message": {"body": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
        {},
        ["deep.json: nested deeper than 100 levels"],
    ),
    ("deep.yaml", DEEP_YAML.encode(), {}, ["deep.yaml: nested deeper than 100 levels"]),
    (
        "parens.yaml",
        MINIMAL_YAML.replace("{messages: reply}", '{messages: "' + "(" * 3000 + 'a"}').encode(),
        {},
        ["parens.yaml: response.messages: JMESPath expression", "nested deeper than 100"],
    ),
    # 7. not UTF-8
    (
        "latin.yaml",
        MINIMAL_YAML.replace("http://bot.test", '"http://x\xff"').encode("latin-1"),
        {},
        ["latin.yaml: not UTF-8 text (byte 0xff at line 1"],
    ),
    # 8. a reference that is not one
    (
        "ref.yaml",
        (MINIMAL_YAML + 'headers: {Authorization: "Bearer ${ BOT_TOKEN }"}\n').encode(),
        {"BOT_TOKEN": SECRET},
        ["ref.yaml: headers.Authorization: '${ BOT_TOKEN }' is not a valid environment ref"],
    ),
]


@pytest.mark.parametrize(
    ("name", "content", "env", "expected"), CLI_CASES, ids=[c[0] for c in CLI_CASES]
)
def test_tau_http_check_reports_a_bad_config_in_one_line(
    tmp_path: Path, name: str, content: bytes, env: dict[str, str], expected: list[str]
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    err = _one_line(_tau("http", "check", str(path), env=env), *expected)
    assert SECRET not in err


def test_tau_run_names_the_file_of_an_undecodable_config(tmp_path: Path) -> None:
    path = tmp_path / "latin.yaml"
    path.write_bytes(MINIMAL_YAML.replace("http://bot.test", '"http://x\xff"').encode("latin-1"))
    proc = _tau(
        "run",
        "--env",
        "retail",
        "--agent-strategy",
        "http",
        "--http-config",
        str(path),
        "--user-strategy",
        "scripted",
        "--task-ids",
        "0",
        "--log-dir",
        str(tmp_path / "out"),
        "--quiet",
    )
    _one_line(proc, f"{path}: not UTF-8 text")


# -- 1. timeout -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", [0, -1, "0", "-2.5", "abc", True, float("nan"), float("inf"), 604801, "1e300"]
)
def test_a_timeout_that_is_not_a_positive_number_is_rejected(value: Any) -> None:
    message = _load_error(_with(timeout=value))
    assert message == (
        "http config: timeout: must be a number of seconds greater than 0 and at most 604800,"
        " or a table of connect/read/write/pool/total/call seconds"
    )


@pytest.mark.parametrize(("value", "read"), [(30, 30.0), ("12.5", 12.5), ({"read": 7}, 7.0)])
def test_good_timeouts_still_load(value: Any, read: float) -> None:
    assert load_config(_with(timeout=value), environ={}).config.timeouts.read == read


def test_a_bad_timeout_table_names_only_its_own_key() -> None:
    assert _load_error(_with(timeout={"read": 0})) == (
        "http config: timeout.read: Input should be greater than 0"
    )


def test_a_key_named_like_a_union_member_is_still_named() -> None:
    assert _load_error(_with(float={"a": 1})) == "http config: float: unknown key"


# -- 2. headers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("over", "where"),
    [
        ({"headers": {"Bad Header": "v"}}, "headers: 'Bad Header' is not a valid header name"),
        ({"headers": {"X:Y": "v"}}, "headers: 'X:Y' is not a valid header name"),
        ({"headers": {"": "v"}}, "headers: '' is not a valid header name"),
        (
            {"message": {"headers": {"Caf\u00e9": "v"}}},
            "message.headers: 'Caf\u00e9' is not a valid header name",
        ),
        (
            {"tool_results": {"headers": {"X-A": "a\r\nInjected: 1"}}},
            "tool_results.headers: the value of header 'X-A' holds a line break",
        ),
        (
            {"health": {"headers": {"X-A": "a\x00"}}},
            "health.headers: the value of header 'X-A' holds a line break, NUL",
        ),
        (
            {"session": {"start": {"headers": {"X-A": "caf\u00e9"}}}},
            "session.start.headers: the value of header 'X-A' holds",
        ),
    ],
)
def test_headers_that_cannot_be_sent_are_rejected_at_load(over: dict[str, Any], where: str) -> None:
    assert where in _load_error(_with(**over))


def test_a_header_value_from_the_environment_is_checked_and_not_quoted() -> None:
    env = {"BOT_TOKEN": "tok-123\nX-Evil: 1"}
    message = _load_error(_with(headers={"Authorization": "Bearer ${BOT_TOKEN}"}), env)
    assert "headers: the value of header 'Authorization'" in message
    assert "tok-123" not in message


def test_ordinary_headers_and_templates_still_load() -> None:
    headers = {"Authorization": "Bearer {{ session_id }}", "X-Api-Key": "k\t1", "A.b_c~!": "v"}
    assert load_config(_with(headers=headers), environ={}).config.headers == headers


@pytest.mark.parametrize("said", ["two\nlines", "caf\u00e9"])
async def test_a_rendered_header_that_is_not_http_fails_once_as_a_config_error(
    said: str,
) -> None:
    """A header templated from the user's message: nothing to retry, no connection
    problem; one attempt, no backoff wait."""
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async with hostile_server(reply(b'{"reply": "hi"}')) as url:
        cfg = _with(base_url=url, headers={"X-Said": "{{ message }}"})
        provider = HttpProvider(load_config(cfg, environ={}), sleep=sleep)
        adapter = provider.new_adapter()
        await adapter.start(SessionContext(session_id="s-1", domain="toy", tools=[]))
        with pytest.raises(AdapterConfigError) as info:
            await adapter.send(UserTurn(said))
        await provider.aclose()
    assert not info.value.retryable
    assert "cannot be sent as HTTP" in str(info.value)
    assert waits == []


async def test_a_local_protocol_error_is_not_retried() -> None:
    attempts = 0

    async def call() -> None:
        nonlocal attempts
        attempts += 1
        raise httpx.LocalProtocolError("Illegal header value")

    async def no_wait(_: float) -> None:
        raise AssertionError("a LocalProtocolError was retried")

    with pytest.raises(httpx.LocalProtocolError):
        await call_with_retries(call, RetryConfig(max_attempts=5), sleep=no_wait)
    assert attempts == 1


# -- 3. a reply that makes a mapping expression fail --------------------------------------


@pytest.mark.parametrize(
    ("document", "expr", "error"),
    [
        ({"reply": "hi", "n": float("inf")}, "ceil(n) > `0`", "OverflowError"),
        ({"reply": "hi", "n": float("nan")}, "floor(n) > `0`", "ValueError"),
        ({"reply": "hi", "n": "x"}, "ceil(n) > `0`", "JMESPathTypeError"),
    ],
)
def test_a_failing_expression_is_a_mapping_error_naming_it(
    document: Any, expr: str, error: str
) -> None:
    mapping = load_config(_with(response={"messages": "reply", "end": expr}), environ={})
    with pytest.raises(MappingError) as info:
        map_reply(document, mapping.config.response)
    assert str(info.value).startswith(f"response.end ({expr!r}) failed on the reply: {error}")


INF_REPLY = b'{"reply": "hi", "n": 1e999}'


@pytest.mark.parametrize(
    ("over", "key"),
    [
        ({"response": {"messages": "reply", "end": "ceil(n) > `0`"}}, "response.end"),
        ({"response": {"messages": "reply", "handoff": "floor(n)"}}, "response.handoff"),
        (
            {"response": {"messages": "reply", "usage": {"prompt_tokens": "ceil(n)"}}},
            "response.usage.prompt_tokens",
        ),
        (
            {"session": {"mode": "server", "start": {"path": "/s"}, "id_path": "ceil(n)"}},
            "session.id_path",
        ),
    ],
)
async def test_a_reply_breaking_an_expression_is_the_bots_protocol_error(
    over: dict[str, Any], key: str
) -> None:
    async with hostile_server(reply(INF_REPLY)) as url:
        provider = HttpProvider(load_config(_with(base_url=url, **over), environ={}))
        scored = await run_task(
            make_toy_domain(), TOY_TASK, 0, provider.new_adapter(), ScriptedUser()
        )
        await provider.aclose()
    error = scored.result.error
    assert error is not None
    assert error.kind == "protocol_error", error
    assert f"{key} (" in error.message and "OverflowError" in error.message
    assert "Traceback" not in error.message
    assert classify({"source": "agent", "kind": error.kind}) == AGENT_FAILURE


def _inf_bot() -> Starlette:
    async def answer(request: Request) -> Response:
        await request.body()
        return Response(INF_REPLY, media_type="application/json")

    return Starlette(routes=[Route("/chat", answer, methods=["POST"])])


def test_probe_and_run_report_the_bots_overflow_as_its_failure(
    tmp_path: Path, serve: Callable[[Any], str]
) -> None:
    url = serve(_inf_bot())
    config = tmp_path / "bot.yaml"
    config.write_text(
        f"base_url: {url}\nsession: {{mode: stateless}}\n"
        'message: {path: /chat, body: {text: "{{ message }}"}}\n'
        'response: {messages: reply, end: "ceil(n) > `0`"}\n'
    )
    probe = _tau("http", "check", "--probe", str(config))
    _one_line(probe, "probe failed (protocol_error):", "response.end ('ceil(n) > `0`')")
    out = tmp_path / "out"
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
        "inf",
        "--quiet",
    )
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in (out / "inf.jsonl").read_text().splitlines()]
    errors = [r["error"] for r in records if r.get("error")]
    assert len(errors) == 1, records
    assert errors[0]["class"] == "agent_failure" and errors[0]["kind"] == "protocol_error"
    assert "OverflowError" in errors[0]["message"]


# -- 4. secrets in load errors ----------------------------------------------------------


@pytest.mark.parametrize(
    ("over", "secret"),
    [
        ({"base_url": "https//bot.example.com/v1?api_key=${BOT_API_KEY}"}, SECRET),
        ({"base_url": "${BOT_API_KEY}"}, SECRET),
        ({"response": {"messages": "reply.${BOT_API_KEY}("}}, SECRET),
        ({"message": {"body": {"text": "{{ ${BOT_API_KEY} }}"}}}, "sk_live_SUPERSECRET"),
        ({"secret_env": ["TENANT"], "base_url": "${TENANT}"}, "acme-tenant://x"),
    ],
)
def test_load_errors_mask_secret_variables(over: dict[str, Any], secret: str) -> None:
    message = _load_error(_with(**over), {"BOT_API_KEY": secret, "TENANT": secret})
    assert secret not in message and "***" in message, message


def test_load_errors_mask_a_secret_wherever_it_was_used() -> None:
    env = {"BOT_TOKEN": SECRET}
    cfg = _with(
        headers={"Authorization": "Bearer ${BOT_TOKEN}"},
        response={"messages": "reply[?a=='${BOT_TOKEN}'"},
    )
    message = _load_error(cfg, env)
    assert "response.messages" in message and SECRET not in message


def test_load_errors_keep_a_plain_base_url_variable() -> None:
    message = _load_error(_with(base_url="${BOT_URL}"), {"BOT_URL": "htp://bot.example"})
    assert "got 'htp://bot.example'" in message


# -- 5. and 6. size and depth -----------------------------------------------------------


def test_an_alias_bomb_is_refused_without_expanding_it(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB_YAML)
    with pytest.raises(ConfigError, match=r"bomb\.yaml: message\.body: more than 100,000"):
        load_config(path, environ={})


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text(MINIMAL_YAML + "query_extra: &a [*a]\n")
    with pytest.raises(ConfigError, match=r"query_extra: nested deeper than 100 levels"):
        load_config(path, environ={})


def test_ordinary_aliases_still_load(tmp_path: Path) -> None:
    path = tmp_path / "alias.yaml"
    path.write_text(
        "base_url: http://x\nheaders: &h {X-Team: blue}\n"
        'message: {headers: *h, body: {text: "{{ message }}"}}\nresponse: {messages: reply}\n'
    )
    cfg = load_config(path, environ={}).config
    assert cfg.message.headers == {"X-Team": "blue"}


@pytest.mark.parametrize("depth", [150, 1000])
def test_deep_yaml_is_one_error(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("base_url: http://x\nmessage: {body: " + "[" * depth + "]" * depth + "}\n")
    with pytest.raises(ConfigError, match="nested deeper than 100 levels"):
        load_config(path, environ={})


def test_a_deep_mapping_source_is_one_error() -> None:
    body: Any = "x"
    for _ in range(500):
        body = [body]
    message = _load_error(_with(message={"body": body}))
    assert message == "http config: message.body: nested deeper than 100 levels"


@pytest.mark.parametrize(
    "expr",
    ["(" * 3000 + "a" + ")" * 3000, "!" * 3000 + "a", "!" * 150 + "a", "`" + "[" * 5000 + "`"],
)
def test_deep_jmespath_is_one_error(expr: str) -> None:
    message = _load_error(_with(response={"messages": expr}))
    assert message.startswith("http config: response.messages: ")
    assert "nested deeper than 100 levels" in message or "invalid JMESPath" in message


# -- 8. environment references ----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["${ NAME }", "${NAME-default}", "${1BAD}", "${A:-{x}}", "${A:-${B}}", "${A", "x ${}"],
)
def test_a_malformed_reference_is_an_error_naming_the_key(text: str) -> None:
    message = _load_error(_with(headers={"X-Key": text}), {"NAME": "v", "A": "a", "B": "b"})
    assert message.startswith("http config: headers.X-Key: '${")
    assert "is not a valid environment reference" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${A}", "a"),
        ("${UNSET:-}", ""),
        ("${UNSET:-http://h:5/p q}", "http://h:5/p q"),
        ("$${A}", "${A}"),
        ("cost $5 ${A}$$", "cost $5 a$"),
        ("${A}${A_2:-z}", "az"),
    ],
)
def test_valid_references_still_substitute(text: str, expected: str) -> None:
    cfg = load_config(_with(headers={"X-Key": text}), environ={"A": "a"}).config
    assert cfg.headers["X-Key"] == expected
