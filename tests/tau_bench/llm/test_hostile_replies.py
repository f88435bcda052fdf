"""Model services that misbehave on the wire (compression bombs, bodies too large or that
never end, replies of the wrong shape, absurd token counts): every path (litellm; direct
on aiohttp and on httpx) fails the same typed way or keeps the answer, against a real
server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import math
import os
import socket
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tau_adapters.protocol import AdapterConfigError
from tau_bench.llm import (
    Completion,
    LLMConfig,
    LLMError,
    LLMUnavailableError,
    aclose_clients,
    complete,
    set_llm_path,
)
from tau_bench.llm.direct_clients import TRANSPORT_ENV
from tests.tau_bench.llm.call_paths import (
    CALL_DEADLINE,
    MESSAGES,
    PATHS,
    call_once,
    choose_path,
    no_wait_policy,
)
from tests.tau_bench.llm.raw_server import Raw, RawServer, as_json, chat, gzip_bomb

MIB = 1 << 20
POLICY = no_wait_policy(3)


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test on the litellm path and on both transports of the direct path."""
    choose_path(str(request.param), monkeypatch)
    yield str(request.param)
    set_llm_path("auto")


async def call(server: RawServer, **kw: Any) -> Completion | LLMError:
    """One `complete` against `server`: the completion, or the `LLMError` it raised."""
    return await call_once(server.base_url, POLICY, **kw)


async def test_a_gzip_bomb_fails_within_the_byte_limit_without_being_decoded(path: str) -> None:
    with RawServer(lambda: gzip_bomb(128)) as server:  # 128 KiB on the wire
        tracemalloc.start()
        try:
            got = await call(server)  # the default limit, 16 MiB
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    assert isinstance(got, LLMError), got
    assert got.kind == "reply_too_large" and not got.retryable
    assert got.attempts == 1 and server.posts == 1  # the same request gets the same answer
    assert f"larger than the {16 * MIB} bytes allowed (max_response_bytes)" in str(got)
    assert peak < 64 * MIB  # the 128 MiB it decodes to were never held


@pytest.mark.parametrize("length", [True, False], ids=["content-length", "until-close"])
async def test_a_plain_reply_over_the_limit_fails_the_same_way(path: str, length: bool) -> None:
    reply = as_json(chat(content="x" * (2 * MIB)))
    reply.length = length
    with RawServer(lambda: reply) as server:
        got = await call(server, max_response_bytes=MIB)
    assert isinstance(got, LLMError), got
    assert got.kind == "reply_too_large" and not got.retryable and server.posts == 1


async def test_a_reply_within_the_limit_is_read_compressed_or_not(path: str) -> None:
    small = gzip_bomb(1)  # 1 MiB decoded
    with RawServer(lambda: small) as server:
        got = await call(server, max_response_bytes=2 * MIB)
    assert isinstance(got, Completion), got
    assert got.content == "A" * MIB


def test_the_byte_limit_is_an_llm_option_with_a_generous_default() -> None:
    assert LLMConfig("m").max_response_bytes == 16 * MIB
    options = {"model": "m", "max_response_bytes": "4096"}
    assert LLMConfig.from_options(options).max_response_bytes == 4096
    for bad in ("0", "lots", "-5"):
        with pytest.raises(AdapterConfigError, match="max_response_bytes"):
            LLMConfig.from_options({"model": "m", "max_response_bytes": bad})


async def test_a_reply_that_never_ends_fails_at_the_call_timeout(path: str) -> None:
    dripping = Raw(b'{"choices": ', headers={"Content-Type": "application/json"}, drip=True)
    with RawServer(lambda: dripping) as server:
        got = await call(server, timeout=0.5, max_attempts=2)
    assert isinstance(got, LLMUnavailableError), got  # the timeout kind, retried
    assert got.kind == "llm_unavailable" and got.retryable and got.attempts == 2
    assert [r.kind for r in got.retries] == ["llm_unavailable"]
    assert "no complete answer within 0.5 s (timeout)" in str(got)


MALFORMED = {
    "choices is a string, expected a list": {"choices": "abc"},
    "choices[0] is a number, expected an object": {"choices": [42]},
    "choices[0].message is a string, expected an object": {
        "choices": [{"index": 0, "message": "hello"}]
    },
    "choices[0].message.tool_calls is a string, expected a list": chat(
        content="hi", tool_calls="notalist"
    ),
    "choices[0].message.tool_calls[0] is a number, expected an object": chat(
        content="hi", tool_calls=[1, 2]
    ),
    "choices[0].message.content is a number, expected a string": chat(content=12345),
    "it has no choices": {"choices": [], "usage": {"prompt_tokens": 1}},
    "the reply is a list, expected a JSON object": [1, 2, 3],
}


@pytest.mark.parametrize("problem", list(MALFORMED))
async def test_a_reply_of_the_wrong_shape_is_one_typed_error_saying_what_is_wrong(
    path: str, problem: str
) -> None:
    with RawServer(lambda: as_json(MALFORMED[problem])) as server:
        got = await call(server)
    assert isinstance(got, LLMError), got
    assert got.kind == "malformed_reply" and not got.retryable
    assert got.attempts == 1 and server.posts == 1
    assert str(got) == f"openai/gpt-4o-mini (openai): malformed reply: {problem}"


async def test_a_reply_that_is_not_json_is_malformed(path: str) -> None:
    with RawServer(lambda: Raw(b"<html>gateway</html>")) as server:
        got = await call(server)
    assert isinstance(got, LLMError), got
    assert got.kind == "malformed_reply" and "not JSON" in str(got)


BAD_USAGE = {
    "nan": ({"prompt_tokens": math.nan, "completion_tokens": math.inf}, (0, 0)),
    "negative": ({"prompt_tokens": -1_000_000_000, "completion_tokens": 5}, (0, 5)),
    "huge": ({"prompt_tokens": 1e308, "completion_tokens": 7}, (0, 7)),
    "absurd": ({"prompt_tokens": 10, "completion_tokens": 2_000_000_000}, (10, 0)),
    "strings": ({"prompt_tokens": "lots", "completion_tokens": 3}, (0, 3)),
    "a list": ([1, 2], (0, 0)),
    "nan cached": (
        {
            "prompt_tokens": 10,
            "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": math.nan},
        },
        (10, 5),
    ),
}


@pytest.mark.parametrize("case", list(BAD_USAGE))
async def test_unusable_token_counts_are_unknown_and_the_answer_is_kept(
    path: str, case: str
) -> None:
    usage, (prompt, completion) = BAD_USAGE[case]
    clean = {"prompt_tokens": prompt, "completion_tokens": completion}
    replies = [as_json({**chat(content="hello"), "usage": u}) for u in (usage, clean)]
    with RawServer(lambda: replies.pop(0)) as server:
        got = await call(server)
        control = await call(server)  # the same answer with the unusable counts at 0
    assert isinstance(got, Completion) and isinstance(control, Completion), (got, control)
    assert got.content == "hello"
    assert (got.usage.prompt_tokens, got.usage.completion_tokens) == (prompt, completion)
    assert got.usage.cost == control.usage.cost and 0 <= got.usage.cost < 1


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
async def test_a_refused_connection_is_a_connection_error_not_a_timeout(
    transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TRANSPORT_ENV, transport)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed when the block ends: nobody listens there
    set_llm_path("direct")
    config = LLMConfig("openai/m", api_base=f"http://127.0.0.1:{port}/v1", max_attempts=1)
    try:
        with pytest.raises(LLMUnavailableError) as info:
            await asyncio.wait_for(complete(config, MESSAGES), CALL_DEADLINE)
    finally:
        await aclose_clients()
        set_llm_path("auto")
    text = str(info.value)
    assert "Connection error. (" in text, text  # with the transport's reason
    assert "timed out" not in text.lower(), text


TAU = Path(sys.executable).parent / "tau"


@pytest.mark.parametrize(
    ("model", "llm_path"),
    [
        ("openai/gpt-4o-mini", "auto"),
        ("openai/gpt-4o-mini", "litellm"),
        ("mistral/mistral-large-latest", "auto"),  # on a client litellm builds itself
    ],
)
def test_tau_run_records_a_gzip_bomb_as_the_agents_typed_error(
    tmp_path: Path, model: str, llm_path: str
) -> None:
    bomb = gzip_bomb(64)
    with RawServer(lambda: bomb) as server:
        done = subprocess.run(
            [
                str(TAU),
                "run",
                "--env",
                "retail",
                "--task-ids",
                "0",
                "--model",
                model,
                "--api-base",
                server.base_url,
                "--user-strategy",
                "scripted",
                "--llm-path",
                llm_path,
                "--agent-option",
                f"max_response_bytes={MIB}",
                "--skip-preflight",
                "--log-dir",
                str(tmp_path),
                "--run-name",
                "bomb",
                "--quiet",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env={
                **os.environ,
                "OPENAI_API_KEY": "sk-test-not-a-key",
                "MISTRAL_API_KEY": "sk-test-not-a-key",
            },
        )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    lines = (tmp_path / "bomb.jsonl").read_text().splitlines()
    episodes = [r for r in map(json.loads, lines) if r.get("type") == "episode"]
    assert len(episodes) == 1
    error = episodes[0]["error"]
    assert error["kind"] == "reply_too_large" and error["class"] == "agent_failure"
    assert f"larger than the {MIB} bytes allowed (max_response_bytes)" in error["message"]
