"""tau_adapters.redaction: secrets never leave in structured values, texts or payloads."""

from __future__ import annotations

import ast
import json
import re
import urllib.parse
from pathlib import Path

import pytest

import tau_adapters.redaction as redaction
from tau_adapters.redaction import (
    MASK,
    Redactor,
    fingerprint,
    is_redacted,
    is_secret_key,
    mask_encoded,
    mask_values,
    redact_secrets,
    redact_text,
    secret_values,
)

OPTIONS = {
    "http_config": "bot.yaml",
    "headers": {"Authorization": "Bearer sk-live-123", "X-Trace": "on"},
    "backends": [{"api_key": "sk-nested-456", "url": "http://x"}],
    "password": None,
}


@pytest.mark.parametrize("key", ["api_key", "Authorization", "DB_PASSWORD", "x-goog-api-key"])
def test_secret_looking_keys(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize("key", ["model", "headers", "url", "temperature"])
def test_ordinary_keys(key: str) -> None:
    assert not is_secret_key(key)


def test_secrets_are_fingerprinted_at_any_depth() -> None:
    out = redact_secrets(OPTIONS)
    text = json.dumps(out)
    assert "sk-live-123" not in text and "sk-nested-456" not in text
    assert out["headers"]["X-Trace"] == "on" and out["backends"][0]["url"] == "http://x"
    assert out["headers"]["Authorization"] == fingerprint("Bearer sk-live-123")
    assert out["password"] is None  # an unset secret stays unset
    assert OPTIONS["headers"]["Authorization"] == "Bearer sk-live-123"  # input untouched


def test_fingerprints_are_stable_short_and_distinct() -> None:
    first = fingerprint("secret-a")
    assert first == fingerprint("secret-a") != fingerprint("secret-b")
    assert is_redacted(first) and len(first) == len("<redacted sha256:>") + 16
    assert not is_redacted("secret-a") and not is_redacted(None)


def test_an_already_redacted_value_is_never_rehashed() -> None:
    once = redact_secrets(OPTIONS)
    assert redact_secrets(once) == once
    assert fingerprint(fingerprint("x")) == fingerprint("x")


def test_secret_values_finds_strings_under_secret_keys_only() -> None:
    assert secret_values(OPTIONS) == {"Bearer sk-live-123", "sk-nested-456"}
    assert secret_values({"token": fingerprint("old"), "api_key": "abc"}) == set()


def test_mask_values_masks_occurrences_in_strings_and_keys() -> None:
    value = {"error": "refused key sk-nested-456", "sk-nested-456": ["x sk-nested-456 y", 3]}
    out = mask_values(value, {"sk-nested-456"}, mask="<redacted>")
    assert out == {"error": "refused key <redacted>", "<redacted>": ["x <redacted> y", 3]}
    assert mask_values("plain sk-nested-456", ["sk-nested-456"]) == f"plain {MASK}"


def test_the_longest_secret_is_masked_whole() -> None:
    assert mask_values("abcdefgh", ["abcd", "abcdefgh"]) == MASK


def test_redact_text_masks_known_values_environment_and_shapes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "env-token-value-77")
    text = (
        "key sk-abcdef123456 bearer: Bearer tok.en-value url https://x/y?key=AIzaSyABCDEFGHIJKLMNOP "
        "and 'api_key': 'hunter22secret' and my-own-secret-value and env-token-value-77"
    )
    out = redact_text(text, ["my-own-secret-value"])
    for secret in (
        "sk-abcdef123456",
        "tok.en-value",
        "AIzaSyABCDEFGHIJKLMNOP",
        "hunter22secret",
        "my-own-secret-value",
        "env-token-value-77",
    ):
        assert secret not in out
    assert out.startswith("key ***")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "proxy http://bob:s3cr%40t@proxy.corp:3128 refused",
            f"proxy http://bob:{MASK}@proxy.corp:3128 refused",
        ),
        ("ALL_PROXY='socks5://u:hunter2@h:1'", f"ALL_PROXY='socks5://u:{MASK}@h:1'"),
        ("https://example.com:443/path@x", "https://example.com:443/path@x"),
        ("http://user@host:80/ and mailto:a@b.c", "http://user@host:80/ and mailto:a@b.c"),
    ],
)
def test_redact_text_masks_the_password_of_a_url_and_nothing_else(text: str, expected: str) -> None:
    assert redact_text(text) == expected


def test_redactor_masks_payloads_headers_and_learnt_tokens() -> None:
    redactor = Redactor(["s3cr3t-value"], max_chars=40)
    assert redactor.text("a s3cr3t-value b") == f"a {MASK} b"
    assert redactor.headers({"Content-Type": "application/json", "X-Key": "whatever"}) == {
        "Content-Type": "application/json",
        "X-Key": MASK,
    }
    redactor.add("session-tok")
    body = {"s": "session-tok and " + "x" * 100}
    out = redactor.value(body)
    assert "session-tok" not in json.dumps(out)
    assert out["s"].endswith("more chars]")


def test_the_sdk_module_imports_only_the_standard_library() -> None:
    tree = ast.parse(Path(redaction.__file__).read_text())
    roots = {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    } | {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert roots <= {"__future__", "hashlib", "os", "re", "collections", "typing", "urllib"}


@pytest.mark.parametrize(
    ("text", "kept", "hidden"),
    [
        ("https://user:PASS1234@host/v1", "https://user:", "PASS1234"),
        ("https://host/v1?api-key=QKEY1234&model=m", "model=m", "QKEY1234"),
        ("api_token=TOK12345", "api_token=", "TOK12345"),
        ("Authorization: Bearer BEARER12", "Authorization: ", "BEARER12"),
    ],
)
def test_secrets_inside_strings_are_hashed_idempotently(text: str, kept: str, hidden: str) -> None:
    from tau_adapters.redaction import redact_string

    out = redact_string(text)
    assert kept in out and hidden not in out and redact_string(out) == out


@pytest.mark.parametrize(
    "text", ["https://host/v1?model=m", "lang=en", "projects/p/agents/a", "a\nkey=v", "http://[x"]
)
def test_strings_without_secrets_are_left_alone(text: str) -> None:
    from tau_adapters.redaction import redact_string

    assert redact_string(text) == text


ECHOED = 'sekrit/tök/A+B "q\\ 😀'


@pytest.mark.parametrize(
    "spelling",
    [
        ECHOED,
        json.dumps(ECHOED),  # ensure_ascii: \u00f6, a surrogate pair, \" and \\
        json.dumps(ECHOED, ensure_ascii=False),
        json.dumps(ECHOED).replace("/", "\\/"),  # PHP and others escape "/"
        json.dumps(ECHOED).upper(),  # hex digits in capitals; \U is no escape, left alone
        json.dumps(ECHOED).replace("t", "\\u0074"),  # any character may be escaped
        json.dumps(json.dumps({"auth": ECHOED}).replace("/", "\\/")),  # JSON in JSON
        urllib.parse.quote(ECHOED, safe=""),
        re.sub("%..", lambda m: m.group(0).lower(), urllib.parse.quote(ECHOED)),
        urllib.parse.quote_plus(ECHOED),
        urllib.parse.quote(urllib.parse.quote(ECHOED, safe=""), safe=""),  # encoded twice
    ],
)
def test_mask_encoded_masks_json_escaped_and_percent_encoded_spellings(spelling: str) -> None:
    masked = mask_encoded(f"bad auth Bearer {spelling}; bye", [ECHOED, "no"])
    if spelling == json.dumps(ECHOED).upper():  # not a spelling of the secret: kept
        assert masked == f"bad auth Bearer {spelling}; bye"
        return
    assert masked.startswith("bad auth Bearer ") and masked.endswith("; bye"), masked
    assert MASK in masked
    for piece in ("sekrit", "k/A", "A+B", "00f6", "00F6", "ude00"):
        assert piece not in masked, masked


def test_mask_encoded_leaves_other_text_and_plain_masking_alone() -> None:
    text = 'C:\\dir %41 + "quoted\\/slash" \u0041'
    assert mask_encoded(text, ["sekrit-token", None, "abc"]) == text  # "abc" is too short
    assert mask_encoded("a sekrit-token b", ["sekrit-token"]) == "a *** b"
    assert mask_encoded("x sekrit\\u002dtoken y", ["sekrit-token"], mask="#") == "x # y"
    # the existing plain masking is unchanged: an escaped echo is not its business
    assert Redactor(["sekrit/tok"]).text("sekrit\\/tok") == "sekrit\\/tok"
