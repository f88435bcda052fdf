"""The machine's network settings hold on every model-call path alike: a proxy the
environment names (`HTTP_PROXY`, `NO_PROXY`) and litellm's TLS settings (`SSL_VERIFY`,
`SSL_CERT_FILE`). The direct path is chosen automatically for OpenAI models, so a user
behind a proxy, or with a private CA, must not find it failing where litellm succeeds.
Against real servers on 127.0.0.1: a forward proxy, and a model server over TLS with a
certificate made here."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tau_bench.llm import (
    Completion,
    LLMConfig,
    LLMError,
    aclose_clients,
    complete,
    set_llm_path,
)
from tau_bench.llm.direct_clients import TRANSPORT_ENV
from tau_bench.llm.retry import RetryPolicy
from tau_bench.llm.runtime import litellm
from tests.tau_bench.llm.forward_proxy import ForwardProxy
from tests.tau_bench.llm.raw_server import RawServer, as_json, chat

PATHS = ("litellm", "direct-aiohttp", "direct-httpx")
MESSAGES = [{"role": "user", "content": "hi"}]
CALL_DEADLINE = 60.0  # seconds a call may take before the test fails instead of hanging
PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
TLS_ENV = ("SSL_VERIFY", "SSL_CERT_FILE", "SSL_CERT_DIR", "SSL_CERTIFICATE")


async def _no_sleep(seconds: float) -> None:
    return None


POLICY = RetryPolicy(max_attempts=1, initial_wait=0.0, jitter=0.0, sleep=_no_sleep)


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test on the litellm path and on both transports of the direct path, with no
    proxy or TLS setting but the test's own."""
    for name in (*PROXY_ENV, *TLS_ENV):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    chosen = str(request.param)
    monkeypatch.setenv(TRANSPORT_ENV, "httpx" if chosen == "direct-httpx" else "aiohttp")
    litellm()
    set_llm_path(chosen.split("-")[0])
    yield chosen
    set_llm_path("auto")


async def _call(api_base: str) -> Completion | LLMError:
    config = LLMConfig(
        "openai/gpt-4o-mini", api_base=api_base, retry=POLICY, extra={"api_key": "sk-test-1"}
    )
    try:
        return await asyncio.wait_for(complete(config, MESSAGES), CALL_DEADLINE)
    except LLMError as exc:
        return exc
    finally:
        await aclose_clients()


def call(api_base: str) -> Completion | LLMError:
    return asyncio.run(_call(api_base))


def _answer() -> Any:
    return as_json(chat(content="through"))


# ------------------------------------------------------------------------------ proxies


def test_calls_go_through_the_proxy_the_environment_names(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with RawServer(_answer) as model:
        port = model.server.server_address[1]
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
        port = model.server.server_address[1]
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
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tau-test-model")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


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
        port = model.server.server_address[1]
        with ForwardProxy({"127.0.0.1": ("127.0.0.1", port)}) as proxy:
            monkeypatch.setenv("HTTPS_PROXY", proxy.url)
            result = call(model.base_url)
    assert isinstance(result, Completion), result
    assert [line for line, _ in proxy.seen] == [f"CONNECT 127.0.0.1:{port} HTTP/1.1"]
    assert model.posts == 1
