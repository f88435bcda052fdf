"""The machine's network settings hold on every model-call path alike: a proxy the
environment names (`HTTP_PROXY`, `NO_PROXY`) and litellm's TLS settings (`SSL_VERIFY`,
`SSL_CERT_FILE`). The direct path is chosen automatically for OpenAI models, so a user
behind a proxy, or with a private CA, must not find it failing where litellm succeeds.
Against real servers on 127.0.0.1: a forward proxy, and a model server over TLS with a
certificate made here."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tau_bench.llm import (
    Completion,
    LLMError,
    set_llm_path,
)
from tests.certificates import write_self_signed
from tests.tau_bench.llm.call_paths import PATHS, call_once, choose_path, no_wait_policy
from tests.tau_bench.llm.forward_proxy import ForwardProxy
from tests.tau_bench.llm.raw_server import RawServer, as_json, chat

PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
TLS_ENV = ("SSL_VERIFY", "SSL_CERT_FILE", "SSL_CERT_DIR", "SSL_CERTIFICATE")


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test on the litellm path and on both transports of the direct path, with no
    proxy or TLS setting but the test's own."""
    for name in (*PROXY_ENV, *TLS_ENV):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    choose_path(str(request.param), monkeypatch)
    yield str(request.param)
    set_llm_path("auto")


def call(api_base: str) -> Completion | LLMError:
    """One call, made once (no retry), with a key the errors must not show."""
    return asyncio.run(call_once(api_base, no_wait_policy(1), extra={"api_key": "sk-test-1"}))


def _answer() -> Any:
    return as_json(chat(content="through"))


# ------------------------------------------------------------------------------ proxies


def test_calls_go_through_the_proxy_the_environment_names(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with RawServer(_answer) as model:
        port = model.port
        with ForwardProxy({"model.invalid": ("127.0.0.1", port)}) as proxy:
            monkeypatch.setenv("HTTP_PROXY", proxy.url)
            result = call(f"http://model.invalid:{port}/v1")  # a host only the proxy knows
    assert isinstance(result, Completion), result
    assert result.message["content"] == "through"
    assert [line for line, _ in proxy.seen] == [
        f"POST http://model.invalid:{port}/v1/chat/completions HTTP/1.1"
    ]


def test_a_proxy_password_is_sent_to_the_proxy_and_kept_out_of_errors(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with RawServer(_answer) as model:
        port = model.port
        with ForwardProxy({"model.invalid": ("127.0.0.1", port)}) as proxy:
            monkeypatch.setenv("HTTP_PROXY", proxy.url.replace("//", "//team:pr0xy-pass@"))
            result = call(f"http://model.invalid:{port}/v1")
    assert isinstance(result, Completion), result
    assert proxy.seen[0][1] == "Basic dGVhbTpwcjB4eS1wYXNz"  # team:pr0xy-pass

    monkeypatch.setenv("HTTP_PROXY", "http://team:pr0xy-pass@127.0.0.1:9")  # nothing there
    failed = call("http://model.invalid:9/v1")
    assert isinstance(failed, LLMError)
    assert "pr0xy-pass" not in str(failed)


def test_hosts_no_proxy_names_are_called_directly(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with RawServer(_answer) as model, ForwardProxy({}) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        result = call(model.base_url)
    assert isinstance(result, Completion), result
    assert proxy.seen == []
    assert model.posts == 1


# ---------------------------------------------------------------------------------- TLS


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (PEM files)."""
    return write_self_signed(tmp_path_factory.mktemp("tls"))


def _tls_server(certificate: tuple[Path, Path]) -> RawServer:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    return RawServer(_answer, tls=context)


def test_an_unknown_certificate_fails_the_call_saying_so(
    path: str, certificate: tuple[Path, Path]
) -> None:
    with _tls_server(certificate) as model:
        result = call(model.base_url)
    assert isinstance(result, LLMError)
    assert "CERTIFICATE_VERIFY_FAILED" in str(result), str(result)
    assert model.posts == 0


@pytest.mark.parametrize("setting", ["SSL_VERIFY=False", "SSL_CERT_FILE"])
def test_litellms_tls_settings_let_the_call_through(
    path: str, setting: str, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    if setting == "SSL_CERT_FILE":
        monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    else:
        monkeypatch.setenv("SSL_VERIFY", "False")
    with _tls_server(certificate) as model:
        result = call(model.base_url)
    assert isinstance(result, Completion), result
    assert model.posts == 1


def test_https_calls_tunnel_through_the_proxy_the_environment_names(
    path: str, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The usual corporate case: `HTTPS_PROXY` and a private CA (`SSL_CERT_FILE`)."""
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    with _tls_server(certificate) as model:
        port = model.port
        with ForwardProxy({"127.0.0.1": ("127.0.0.1", port)}) as proxy:
            monkeypatch.setenv("HTTPS_PROXY", proxy.url)
            result = call(model.base_url)
    assert isinstance(result, Completion), result
    assert [line for line, _ in proxy.seen] == [f"CONNECT 127.0.0.1:{port} HTTP/1.1"]
    assert model.posts == 1
