from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from adapters.http.config import ConfigError
from adapters.http.config_load import load_config
from adapters.http.presets import PRESETS, load_preset

MINIMAL = {
    "base_url": "http://bot.test",
    "message": {"path": "/chat", "body": {"text": "{{ message }}"}},
    "response": {"messages": "reply"},
}


def _with(**over: object) -> dict[str, object]:
    cfg = json.loads(json.dumps(MINIMAL))
    cfg.update(over)
    return cfg


def test_minimal_config_has_defaults() -> None:
    cfg = load_config(MINIMAL, environ={}).config
    assert cfg.session.mode == "client"
    assert cfg.message.method == "POST"
    assert cfg.retry.statuses == [429, 503]
    assert cfg.tool_results_request().path == "/chat"


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_load_with_their_environment(name: str) -> None:
    env = {"BOT_URL": "http://b", "BOT_TOKEN": "tok-1234", "OPENAI_API_KEY": "sk-12345"}
    loaded = load_config({"preset": name}, environ=env)
    assert loaded.config.base_url.startswith("http")
    assert isinstance(load_preset(name), dict)


def test_yaml_and_json_files(tmp_path: Path) -> None:
    y = tmp_path / "bot.yaml"
    y.write_text(yaml.safe_dump(MINIMAL))
    j = tmp_path / "bot.json"
    j.write_text(json.dumps(MINIMAL))
    assert load_config(y, environ={}).config == load_config(j, environ={}).config
    assert load_config(y, environ={}).source == str(y)


def test_env_substitution_defaults_and_secrets() -> None:
    cfg = _with(
        base_url="${BOT_URL}",
        headers={"Authorization": "Bearer ${BOT_TOKEN}", "X-Model": "${MODEL:-small}"},
        message={"path": "/chat/${TENANT}", "body": {"price": "$$5"}},
    )
    env = {"BOT_URL": "https://bot.example", "BOT_TOKEN": "abc-secret-xyz", "TENANT": "acme-co"}
    loaded = load_config(cfg, environ=env)
    assert loaded.config.base_url == "https://bot.example"
    assert loaded.config.headers["X-Model"] == "small"
    assert loaded.config.message.body == {"price": "$5"}
    assert "abc-secret-xyz" in loaded.secrets
    assert "acme-co" in loaded.secrets  # env values are secret unless only in base_url
    assert "https://bot.example" not in loaded.secrets


def test_missing_env_names_key_and_variable() -> None:
    cfg = _with(headers={"Authorization": "Bearer ${BOT_TOKEN}"})
    with pytest.raises(
        ConfigError, match=r"headers\.Authorization: environment variable BOT_TOKEN is not set"
    ):
        load_config(cfg, environ={})


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (_with(mesage={}), r"mesage: unknown key"),
        (
            {"base_url": "http://x", "response": {"messages": "a"}},
            r"message: required key is missing",
        ),
        (_with(base_url="ftp://x"), r"base_url: must be an http"),
        (_with(message={"method": "FETCH"}), r"message\.method: must be one of"),
        (_with(session={"mode": "server"}), r"session: mode 'server' needs `start`"),
        (_with(response={"tool_call": {}}), r"response: set at least one of"),
        (_with(response={"messages": "a[?"}), r"response\.messages: invalid JMESPath"),
        (
            _with(message={"body": {"x": ["{{ mesage }}"]}}),
            r"message\.body\.x\[0\]: unknown template variable 'mesage'",
        ),
        (
            _with(message={"body": "{{ tool_token }}"}),
            r"message\.body: 'tool_token' needs `server_tools",
        ),
        (_with(timeout={"read": -1}), r"timeout\.read: Input should be greater than 0"),
        (_with(retry={"max_attempts": 0}), r"retry\.max_attempts"),
        ({"preset": "nope"}, r"preset: unknown preset 'nope'"),
    ],
)
def test_errors_name_the_offending_key(config: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(config, environ={})


def test_error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bot.yaml"
    path.write_text("base_url: http://x\nmessage: {}\nresponse: {messages: a}\nretries: 3\n")
    with pytest.raises(
        ConfigError, match=rf"^{path}: retries: unknown key \(did you mean .retry.\?\)$"
    ):
        load_config(path, environ={})
    path.write_text("base_url: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML at line"):
        load_config(path, environ={})
    with pytest.raises(ConfigError, match="cannot read HTTP bot config"):
        load_config(tmp_path / "missing.yaml", environ={})


def test_preset_overrides_and_null_removes() -> None:
    cfg = {
        "preset": "generic-json",
        "headers": {"Authorization": None, "X-Api-Key": "${KEY}"},
        "message": {"body": {"text": "{{ message }}", "lang": "en"}},
        "session": {"end": None},
    }
    loaded = load_config(cfg, environ={"BOT_URL": "http://b", "KEY": "key-12345"})
    c = loaded.config
    assert c.headers == {"X-Api-Key": "key-12345"}
    assert c.message.body == {"text": "{{ message }}", "lang": "en"}
    assert c.message.path == "/sessions/{{ bot_session_id }}/messages"  # kept from the preset
    assert c.session.end is None and c.session.mode == "server"
    assert "key-12345" in loaded.secrets


def test_literal_credential_headers_are_secrets() -> None:
    loaded = load_config(
        _with(headers={"Authorization": "Bearer literal-token-1", "Accept": "application/json"}),
        environ={},
    )
    assert "Bearer literal-token-1" in loaded.secrets and "literal-token-1" in loaded.secrets
    assert "application/json" not in loaded.secrets


def test_timeout_number_or_table() -> None:
    assert load_config(_with(timeout=5), environ={}).config.timeouts.read == 5
    t = load_config(_with(timeout={"connect": 1, "read": 2}), environ={}).config.timeouts
    assert (t.connect, t.read) == (1, 2)
