"""Option validation: fail fast, one clear message, before any network call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.dialogflow.adapter import DialogflowProvider, build
from adapters.dialogflow.config import EMULATOR_ENV, load_config, session_id_for
from tau_adapters.protocol import AdapterConfigError, SessionContext
from tau_adapters.registry import build_provider


def _session(**kw: object) -> SessionContext:
    base: dict[str, object] = {
        "session_id": "s1",
        "domain": "retail",
        "tools": [],
        "task_id": 7,
        "user_id": "yusuf_rossi_9620",
        "trial": 2,
    }
    base.update(kw)
    return SessionContext(**base)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _no_emulator_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EMULATOR_ENV, raising=False)


def test_minimal_options_default_to_global_draft() -> None:
    cfg = load_config({"agent_id": "a1", "project_id": "p1"})
    assert cfg.location == "global"
    assert cfg.api_endpoint == "dialogflow.googleapis.com"
    assert cfg.language_code == "en"
    assert cfg.environment is None
    assert cfg.emulator is None and not cfg.task_params
    assert cfg.session_path("abc") == "projects/p1/locations/global/agents/a1/sessions/abc"


def test_missing_agent_or_project_is_a_config_error() -> None:
    with pytest.raises(AdapterConfigError, match=r"missing agent id.*--agent-id"):
        load_config({"project_id": "p"})
    with pytest.raises(AdapterConfigError, match=r"missing project id.*--project-id"):
        load_config({"agent_id": "a"})
    with pytest.raises(AdapterConfigError, match="bad agent id"):
        load_config({"agent_id": "projects/p/agents/a", "project_id": "p"})


def test_full_agent_name_carries_project_and_location() -> None:
    name = "projects/my-proj/locations/us-central1/agents/1234-abcd"
    cfg = load_config({"agent_id": name})
    assert (cfg.project_id, cfg.location, cfg.agent_id) == ("my-proj", "us-central1", "1234-abcd")
    assert cfg.api_endpoint == "us-central1-dialogflow.googleapis.com"
    assert cfg.agent_name == name
    with pytest.raises(AdapterConfigError, match="does not match"):
        load_config({"agent_id": name, "location": "europe-west1"})
    with pytest.raises(AdapterConfigError, match="does not match"):
        load_config({"agent_id": name, "project_id": "other"})


def test_regional_endpoint_environment_and_override() -> None:
    cfg = load_config(
        {"agent_id": "a", "project_id": "p", "location": "europe-west2", "environment": "prod"}
    )
    assert cfg.api_endpoint == "europe-west2-dialogflow.googleapis.com"
    assert cfg.session_path("s") == (
        "projects/p/locations/europe-west2/agents/a/environments/prod/sessions/s"
    )
    cfg = load_config(
        {"agent_id": "a", "project_id": "p", "environment": "draft", "api_endpoint": "x:443"}
    )
    assert cfg.environment is None and cfg.api_endpoint == "x:443"
    full = "projects/p/locations/global/agents/a/environments/e9"
    assert (
        load_config({"agent_id": "a", "project_id": "p", "environment": full}).environment == "e9"
    )
    with pytest.raises(AdapterConfigError, match="not an environment of"):
        load_config({"agent_id": "a", "project_id": "p", "environment": "projects/q/x"})


def test_nested_agent_options_win() -> None:
    cfg = load_config(
        {
            "agent_id": "outer",
            "project_id": "p",
            "agent_options": {"agent-id": "inner", "language_code": "de"},
        }
    )
    assert cfg.agent_id == "inner" and cfg.language_code == "de"


def test_session_params_render_templates_on_first_turn_values() -> None:
    cfg = load_config(
        {
            "agent_id": "a",
            "project_id": "p",
            "session_params": ["customer={user_id}", "ref=t{task_id}-{trial}", "plain=x=y"],
        }
    )
    assert cfg.render_params(_session()) == {
        "customer": "yusuf_rossi_9620",
        "ref": "t7-2",
        "plain": "x=y",
    }


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (["novalue"], "KEY=TEMPLATE"),
        (["=x"], "KEY=TEMPLATE"),
        (["k={nope}"], "unknown placeholder {nope}"),
        (["k={task_id"], "bad template"),
    ],
)
def test_bad_session_params(raw: list[str], message: str) -> None:
    with pytest.raises(AdapterConfigError, match=message):
        load_config({"agent_id": "a", "project_id": "p", "session_param": raw})


def test_emulator_mode_sends_task_context() -> None:
    cfg = load_config(
        {"agent_id": "a", "project_id": "p", "emulator": "127.0.0.1:1", "task_split": "dev"}
    )
    assert cfg.task_params
    assert cfg.render_params(_session()) == {
        "env": "retail",
        "task_split": "dev",
        "trial": 2,
        "task_id": 7,
        "user_id": "yusuf_rossi_9620",
    }
    assert cfg.render_params(_session(metadata={"task_split": "train"}))["task_split"] == "train"


def test_emulator_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EMULATOR_ENV, "127.0.0.1:9999")
    cfg = load_config({"agent_id": "a", "project_id": "p"})
    assert cfg.emulator == "127.0.0.1:9999"
    assert load_config({"agent_id": "a", "project_id": "p", "emulator": "h:1"}).emulator == "h:1"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"session_ttl": 0}, "session_ttl must be >= 1"),
        ({"session_ttl": 90000}, "at most 86400"),
        ({"session_ttl": "soon"}, "must be a number"),
        ({"response_view": "huge"}, "response_view"),
        ({"gcp_sa_file": "/nonexistent/key.json"}, "credentials file not found"),
        ({"location": "us central"}, "bad location"),
    ],
)
def test_bad_values(options: dict[str, object], message: str) -> None:
    with pytest.raises(AdapterConfigError, match=message):
        load_config({"agent_id": "a", "project_id": "p", **options})


def test_session_ttl_and_credentials_file(tmp_path: Path) -> None:
    key = tmp_path / "key.json"
    key.write_text(json.dumps({"type": "service_account"}))
    cfg = load_config(
        {"agent_id": "a", "project_id": "p", "session_ttl": "3600", "gcp_sa_file": str(key)}
    )
    assert cfg.session_ttl == 3600 and cfg.credentials_file == str(key)


def test_long_session_ids_are_hashed_to_36_chars() -> None:
    assert session_id_for(_session(session_id="short-id")) == "short-id"
    long = session_id_for(_session(session_id="x" * 80))
    assert len(long) == 36 and long == session_id_for(_session(session_id="x" * 80))
    assert len(session_id_for(_session(session_id="has spaces/and slashes"))) == 36


def test_entry_points_build_the_provider() -> None:
    for name in ("dialogflow-cx", "decibel"):
        provider = build_provider(name, {"agent_id": "a", "project_id": "p"})
        assert isinstance(provider, DialogflowProvider)
    with pytest.raises(AdapterConfigError):
        build({})
