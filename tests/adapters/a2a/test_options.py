"""Options: validation with one-line errors, nested agent_options, secrets, the registry."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.a2a.adapter import A2AProvider, build, parse_options
from adapters.a2a.options import Options
from tau_adapters.protocol import AdapterConfigError
from tau_adapters.registry import build_provider, register

RUN_OPTIONS = {"env": "retail", "model": "gpt-4o", "temperature": 0.0, "max_steps": 30}


def test_flat_options_with_the_run_config_validate() -> None:
    options = parse_options({**RUN_OPTIONS, "agent_url": "http://agent.test/", "timeout": "7"})
    assert options.agent_url == "http://agent.test" and options.timeout == 7.0
    assert options.tool_mode == "auto" and options.streaming is None


def test_nested_agent_options_win() -> None:
    options = parse_options(
        {
            "agent_url": "http://flat.test",
            "agent_options": {"agent-url": "http://nested.test", "message_metadata": "k={task_id}"},
        }
    )
    assert options.agent_url == "http://nested.test"
    assert options.metadata_pairs() == [("k", "{task_id}")]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "a2a: missing agent_url: pass --a2a-url URL"),
        ({"agent_url": "ftp://x"}, "a2a: bad agent_url: must be an http(s) URL, got 'ftp://x'"),
        ({"agent_url": "http://x", "tool_mode": "magic"}, "a2a: bad tool_mode:"),
        ({"agent_url": "http://x", "timeout": -1}, "a2a: bad timeout:"),
        ({"agent_url": "http://x", "max_response_bytes": 10}, "a2a: bad max_response_bytes:"),
        ({"agent_url": "http://x", "max_events": 0}, "a2a: bad max_events:"),
        (
            {"agent_url": "http://x", "message_metadata": ["nokey"]},
            "a2a: bad message_metadata: expected KEY=TEMPLATE",
        ),
        (
            {"agent_url": "http://x", "message_metadata": ["k={nope}"]},
            "a2a: bad message_metadata: unknown placeholder {nope}",
        ),
    ],
)
def test_bad_options_give_one_line_naming_the_key(options: dict[str, Any], message: str) -> None:
    with pytest.raises(AdapterConfigError) as info:
        build(options)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_secrets_are_marked_and_not_in_repr() -> None:
    fields = Options.model_fields
    secret = {n for n, f in fields.items() if (f.json_schema_extra or {}).get("secret")}  # type: ignore[union-attr]
    assert secret == {"bearer_token", "api_key"}
    options = parse_options({"agent_url": "http://x", "bearer_token": "tok-1", "api_key": "key-2"})
    assert "tok-1" not in repr(options) and "key-2" not in repr(options)


def test_registry_builds_the_provider() -> None:
    assert build.options_model is Options  # type: ignore[attr-defined]
    register("a2a", build)
    provider = build_provider("a2a", {**RUN_OPTIONS, "agent_url": "http://agent.test"})
    assert isinstance(provider, A2AProvider)


def test_options_module_is_light() -> None:
    import subprocess
    import sys

    code = "import sys, adapters.a2a.options; print(any(m.startswith('a2a') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr
