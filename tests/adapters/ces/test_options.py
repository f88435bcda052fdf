"""Options, credentials, the registry, Struct conversion: offline checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.ces.adapter import CesProvider, build, load_options
from adapters.ces.clients import default_credentials, load_credentials
from adapters.ces.options import Options
from adapters.ces.structs import to_python, to_struct
from tau_adapters.protocol import AdapterAuthError, AdapterConfigError
from tau_adapters.registry import build_provider, register

from .conftest import APP

SECRET = "SECRET-MARKER-do-not-print"


def test_full_app_name_and_regional_endpoint() -> None:
    opts = load_options({"app_id": "projects/p1/locations/eu/apps/a1", "deployment": "d1"})
    assert (opts.project_id, opts.location, opts.app_id) == ("p1", "eu", "a1")
    assert opts.endpoint == "ces.eu.rep.googleapis.com"
    assert opts.deployment == "projects/p1/locations/eu/apps/a1/deployments/d1"
    assert opts.session_name("s") == "projects/p1/locations/eu/apps/a1/sessions/s"
    glob = load_options({"app_id": "a", "project_id": "p", "location": "global"})
    assert glob.endpoint == "ces.googleapis.com" and not glob.sends_task_variables


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "ces: app_id: missing (pass --app-id)"),
        ({"app_id": "a"}, "ces: project_id: missing"),
        ({"app_id": "a/b", "project_id": "p"}, "ces: app_id: bad app id"),
        ({"app_id": APP, "timeout": "soon"}, "ces: timeout: "),
        ({"app_id": APP, "ambiguous_retries": 3}, "ces: ambiguous_retries: "),
        ({"app_id": APP, "variables": ["x={nope}"]}, "ces: variables: "),
        ({"app_id": APP, "credentials_file": "/nonexistent/key.json"}, "ces: credentials_file: "),
        (
            {"app_id": APP, "deployment": "projects/o/locations/us/apps/z/deployments/d"},
            "ces: deployment: ",
        ),
        ({"app_id": APP, "project_id": "other"}, "ces: project_id: 'other' does not match"),
    ],
)
def test_bad_options_fail_with_one_line_naming_the_key(options: dict, message: str) -> None:
    with pytest.raises(AdapterConfigError) as info:
        build(options)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_nested_agent_options_win_and_env_gives_the_emulator(monkeypatch) -> None:
    monkeypatch.setenv("CES_EMULATOR_HOST", "127.0.0.1:9")
    opts = load_options(
        {"app_id": "x", "project_id": "proj", "agent_options": {"app-id": APP, "streaming": True}}
    )
    assert opts.app_name == APP and opts.streaming and opts.emulator == "127.0.0.1:9"
    assert opts.sends_task_variables


def test_registry_and_options_model() -> None:
    assert build.options_model is Options  # type: ignore[attr-defined]
    assert Options.model_fields["credentials_file"].json_schema_extra["flags"]  # type: ignore[index]
    register("ces-test", build)
    provider = build_provider("ces-test", {"app_id": APP, "emulator": "127.0.0.1:9"})
    assert isinstance(provider, CesProvider)


def test_every_credential_file_type_goes_through_google_auth(tmp_path: Path) -> None:
    user = tmp_path / "adc.json"
    user.write_text(
        json.dumps(
            {
                "type": "authorized_user",
                "client_id": "id",
                "client_secret": SECRET,
                "refresh_token": SECRET,
            }
        )
    )
    external = tmp_path / "wif.json"
    token_file = tmp_path / "token"
    token_file.write_text("subject-token")
    external.write_text(
        json.dumps(
            {
                "type": "external_account",
                # Workload identity federation: loading it must not need the network.
                "audience": "//iam.googleapis.com/projects/1/locations/global/"
                "workloadIdentityPools/p/providers/x",
                "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                "token_url": "https://sts.googleapis.com/v1/token",
                "credential_source": {"file": str(token_file)},
            }
        )
    )
    kinds = {
        type(load_credentials(load_options({"app_id": APP, "credentials_file": str(f)}))).__module__
        for f in (user, external)
    }
    assert kinds == {"google.oauth2.credentials", "google.auth.identity_pool"}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"type": "nonsense", "private_key": SECRET}))
    with pytest.raises(AdapterConfigError) as info:
        load_credentials(load_options({"app_id": APP, "credentials_file": str(bad)}))
    assert SECRET not in str(info.value) and "bad.json" in str(info.value)


def test_missing_adc_is_an_auth_error(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(AdapterAuthError, match="no Google credentials found"):
        default_credentials(load_options({"app_id": APP}))


def test_integral_floats_become_ints_where_the_schema_allows() -> None:
    schema = {
        "type": "object",
        "properties": {
            "amount": {"type": "number"},
            "zip": {"type": "string"},
            "items": {"type": "array", "items": {"type": "integer"}},
            "ratio": {"type": "number"},
        },
    }
    value = to_python(
        to_struct({"ratio": 0.5, "items": [1, 2], "zip": "02139", "amount": 250, "x": 3}), schema
    )
    assert value == {"amount": 250, "zip": "02139", "items": [1, 2], "ratio": 0.5, "x": 3}
    assert [type(value[k]) for k in ("amount", "ratio", "x")] == [int, float, int]
    assert list(value) == ["amount", "zip", "items", "ratio", "x"]  # schema order
    assert type(value["items"][0]) is int
    assert to_python(to_struct({"zip": 5}), schema) == {"zip": 5.0}  # declared otherwise
