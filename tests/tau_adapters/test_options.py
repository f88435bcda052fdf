"""An adapter's options as the command line meets them: a required option left out is
named with the flag that gives it, and a switch has a `--no-` spelling."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from tau_adapters.options import option_flags, validate_options
from tau_adapters.protocol import AdapterConfigError


class Options(BaseModel):
    agent_url: str = Field(json_schema_extra={"flags": ["--a2a-url"]})
    app_id: str
    streaming: bool | None = None


def test_a_missing_option_names_its_flag() -> None:
    # Was "a2a: option agent_url: Field required", naming no flag.
    with pytest.raises(AdapterConfigError) as raised:
        validate_options("a2a", Options, {"app_id": "x"})
    assert str(raised.value) == "a2a: missing option agent_url: pass --a2a-url"
    with pytest.raises(AdapterConfigError) as raised:
        validate_options("a2a", Options, {"agent_url": "http://h"})
    assert str(raised.value) == "a2a: missing option app_id: pass --app-id"


def test_a_switch_is_turned_off_by_its_no_spellings() -> None:
    flags = {f.field: f for f in option_flags(Options)}
    assert flags["streaming"].off_flags == ("--no-streaming", "--no_streaming")
    assert flags["agent_url"].off_flags == ()
