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


def test_credentials_in_endpoint_urls_and_key_value_options_are_hashed(tmp_path) -> None:
    """`--api-base https://user:PASS@host/v1?api-key=...` and a Dialogflow
    `--session-param api_token=...` reach the results files hashed, through `tau run`."""
    import subprocess
    import sys
    from pathlib import Path

    from tests.conftest import DATA_DIR

    tau = Path(sys.executable).parent / "tau"
    args = [
        *("run", "--env", "airline", "--agent-strategy", "oracle", "--user-strategy"),
        *("scripted", "--task-ids", "0", "--data-dir", str(DATA_DIR), "--log-dir", str(tmp_path)),
        *("--api-base", "http://user:SECRETPASS@127.0.0.1:9/v1?api-key=SECRETQ&model=m"),
        *("--user-api-base", "http://u:SECRETU@127.0.0.1:9/"),
    ]
    proc = subprocess.run(
        [str(tau), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    written = "".join(p.read_text() for p in tmp_path.iterdir())
    for secret in ("SECRETPASS", "SECRETQ", "SECRETU"):
        assert secret not in written and secret not in proc.stdout + proc.stderr
    assert "127.0.0.1:9/v1?api-key=<redacted sha256:" in written and "model=m" in written
    cfg = RunConfig(
        agent_strategy="decibel",
        agent_options={"session_params": ["api_token=SESSIONSECRET", "lang=en"]},
    )
    text = json.dumps(cfg.public_dict())
    assert "SESSIONSECRET" not in text and "lang=en" in text
