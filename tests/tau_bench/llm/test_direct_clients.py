"""The direct path's clients: a request built from a template is the request the openai
SDK builds itself, byte for byte, and the templates are bounded."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx
import openai
import pytest
from openai._models import FinalRequestOptions

from tau_bench.llm.direct_clients import TEMPLATES_PER_CLIENT, lean_openai_class

URL = "http://127.0.0.1:9/v1"


def _client() -> Any:
    return lean_openai_class()(base_url=URL, api_key="sk-test", max_retries=0)


def _options(**update: Any) -> Any:
    base = FinalRequestOptions.construct(method="post", url="/chat/completions", max_retries=0)
    return base.model_copy(update={"idempotency_key": "tau-1", "headers": {}, **update})


def _sdk_request(client: Any, options: Any, retries_taken: int = 0) -> httpx.Request:
    return openai.AsyncOpenAI._build_request(client, options, retries_taken=retries_taken)


def _same(ours: httpx.Request, sdk: httpx.Request) -> None:
    assert ours.method == sdk.method
    assert str(ours.url) == str(sdk.url)
    assert ours.headers.raw == sdk.headers.raw  # the same headers, in the same order
    assert ours.content == sdk.content
    assert ours.extensions == sdk.extensions


CASES = [
    ({"timeout": 600.0, "content": b'{"model":"m","messages":[]}'}, 0),
    ({"timeout": 30.0, "content": b'{"model":"m"}'}, 0),
    ({"timeout": 30.0, "content": b'{"model":"m"}'}, 2),
    ({"timeout": httpx.Timeout(5.0, read=7.0), "content": b"{}"}, 0),
    ({"timeout": None, "content": "é".encode() * 1000}, 0),
]


@pytest.mark.parametrize(("update", "retries"), CASES)
def test_a_templated_request_is_the_request_the_sdk_builds(update: Any, retries: int) -> None:
    client = _client()
    for case, case_retries in CASES:  # other templates first: each call picks its own
        client._build_request(_options(**case), retries_taken=case_retries)
    options = _options(**update)
    ours = client._build_request(options, retries_taken=retries)
    _same(ours, _sdk_request(client, options, retries))
    again = client._build_request(
        _options(**{**update, "content": b'{"a":1}'}), retries_taken=retries
    )
    assert again.content == b'{"a":1}' and again.headers["content-length"] == "7"


def test_requests_share_no_mutable_state_with_their_template() -> None:
    client = _client()
    first = client._build_request(_options(timeout=5.0, content=b"{}"))
    first.headers["Accept-Encoding"] = "identity"  # as the bounded transport does
    first.extensions["timeout"]["read"] = 1.0
    first.extensions["sni_hostname"] = "elsewhere"
    second = client._build_request(_options(timeout=5.0, content=b"{}"))
    _same(second, _sdk_request(client, _options(timeout=5.0, content=b"{}")))


@pytest.mark.parametrize(
    "update",
    [
        {"headers": {"X-Team": "blue"}, "content": b"{}"},
        {"json_data": {"model": "m"}},
        {"params": {"api-version": "1"}, "content": b"{}"},
    ],
)
def test_anything_but_a_plain_body_is_built_by_the_sdk(update: Any) -> None:
    client = _client()
    client._build_request(_options(timeout=5.0, content=b"{}"))  # a template exists
    options = _options(timeout=5.0, **update)
    ours = client._build_request(options)
    _same(ours, _sdk_request(client, options))
    if "headers" in update:
        assert ours.headers["x-team"] == "blue"
    if "params" in update:
        assert ours.url.params["api-version"] == "1"


def test_with_the_sdks_debug_log_on_the_sdk_builds_and_logs_the_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = _client()
    with caplog.at_level(logging.DEBUG, logger="openai"):
        client._build_request(_options(timeout=5.0, content=b"{}"))
    assert "Request options" in caplog.text


def test_the_templates_of_a_client_are_bounded() -> None:
    client = _client()
    for seconds in range(3 * TEMPLATES_PER_CLIENT):
        client._build_request(_options(timeout=float(seconds + 1), content=b"{}"))
    assert len(client._templates) == TEMPLATES_PER_CLIENT
    late = _options(timeout=float(3 * TEMPLATES_PER_CLIENT), content=b"{}")
    _same(client._build_request(late), _sdk_request(client, late))


def test_the_user_agent_is_the_sdks() -> None:
    client = _client()
    assert client.user_agent == f"AsyncOpenAI/Python {openai.__version__}"


def test_a_templated_request_reaches_the_server_whole() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"ok": True})

    async def go() -> None:
        http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        client = lean_openai_class()(
            base_url=URL, api_key="sk-test", max_retries=0, http_client=http
        )
        for body in (b'{"n":1}', b'{"n":22}'):
            answer = await client.request(httpx.Response, _options(timeout=5.0, content=body))
            assert answer.json() == {"ok": True}
        await client.close()

    asyncio.run(go())
    assert [r.content for r in seen] == [b'{"n":1}', b'{"n":22}']
    assert [r.headers["content-length"] for r in seen] == ["7", "8"]
    assert all(r.headers["authorization"] == "Bearer sk-test" for r in seen)
