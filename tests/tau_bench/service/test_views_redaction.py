"""What `GET /runs/{id}` shows of a run's options: fingerprints, never secrets."""

from __future__ import annotations

from tau_adapters.redaction import fingerprint
from tau_bench.service.views import public_config, scrub


def test_nested_secrets_get_the_same_fingerprint_as_at_top_level() -> None:
    # The old deep_redact hashed nested secrets twice (a hash of the hash), so the value
    # shown by the API did not match the one in the run's results header.
    config = {"agent_options": {"headers": {"Authorization": "Bearer abc123"}, "api_key": "k-1"}}
    options = public_config(config)["agent_options"]
    assert options["headers"]["Authorization"] == fingerprint("Bearer abc123")
    assert options["api_key"] == fingerprint("k-1")


def test_already_redacted_options_are_shown_as_they_are() -> None:
    stored = {
        "agent_options": {"api_key": fingerprint("k-1"), "nested": {"token": fingerprint("t")}}
    }
    assert public_config(stored)["agent_options"] == stored["agent_options"]


def test_server_paths_are_left_out() -> None:
    shown = public_config({"log_dir": "/srv/x", "data_dir": "/d", "env": "retail"})
    assert shown == {"env": "retail", "agent_options": {}}


def test_scrub_uses_the_service_mask() -> None:
    assert scrub({"error": "refused api key k-12345"}, {"k-12345"}) == {
        "error": "refused api key ***"
    }
