"""Secrets in agent options never reach result headers, at any depth."""

from __future__ import annotations

import json

from tau_adapters.redaction import redact_secrets as redact
from tau_bench.config import RunConfig


def test_nested_secret_options_are_hashed_not_stored() -> None:
    cfg = RunConfig(
        agent_strategy="http",
        agent_options={
            "http_config": "bot.yaml",
            "headers": {"Authorization": "Bearer sk-live-123", "X-Trace": "on"},
            "backends": [{"api_key": "sk-nested-456"}],
        },
    )
    text = json.dumps(cfg.public_dict())
    assert "sk-live-123" not in text and "sk-nested-456" not in text
    assert "bot.yaml" in text and '"X-Trace": "on"' in text
    # hashing is stable, so resume can still compare fingerprints
    assert cfg.fingerprint() == RunConfig(**cfg.model_dump()).fingerprint()
    assert redact({"token": "a"}) != redact({"token": "b"})
