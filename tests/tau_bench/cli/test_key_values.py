"""`tau_bench.cli.key_values`: the one KEY=VALUE parser of the adapters' commands
(`--brain-option` of the emulators and the reference bots)."""

from __future__ import annotations

import pytest

from tau_bench.cli.errors import UserError
from tau_bench.cli.key_values import key_values


def test_items_become_options_with_underscored_keys() -> None:
    items = ["model=openai/m", " api-base =http://127.0.0.1:8000/v1", "note=a=b", "empty="]
    assert key_values(items, "--brain-option") == {
        "model": "openai/m",
        "api_base": "http://127.0.0.1:8000/v1",
        "note": "a=b",  # the first '=' splits; the value is kept as written
        "empty": "",
    }


def test_a_later_item_wins_and_none_is_empty() -> None:
    assert key_values(["temperature=0", "temperature=0.5"], "--x") == {"temperature": "0.5"}
    assert key_values([], "--x") == {}


@pytest.mark.parametrize("item", ["temperature", "=0.5", "  =x", ""])
def test_an_item_without_key_or_equals_is_one_line_naming_the_flag(item: str) -> None:
    with pytest.raises(UserError) as info:
        key_values(["model=m", item], "--brain-option")
    assert str(info.value) == f"--brain-option expects KEY=VALUE, got {item!r}"
