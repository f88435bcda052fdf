"""The text convention and integral-float coercion, offline."""

from __future__ import annotations

import pytest

from adapters.a2a import textmode
from adapters.a2a.convention import ConventionError, parse_tool_call

TOOLS = [{"type": "function", "function": {"name": "find", "parameters": {"type": "object"}}}]


def test_first_message_carries_policy_tools_and_the_quoted_user_text() -> None:
    text = textmode.first_message("Be kind.", TOOLS, 'Hi "there"\nbye')
    assert text.startswith("Be kind.") and '"name": "find"' in text and "<json>" in text
    assert textmode.user_text_of_first_message(text) == 'Hi "there"\nbye'


def test_reply_with_actions_and_plain_text() -> None:
    reply = (
        'Sure. <json>{"name": "respond", "arguments": {"content": "One moment"}}</json>\n'
        '<json>{"name": "find", "arguments": {"id": 3}}</json>'
    )
    actions = textmode.parse_reply(reply)
    assert actions.messages == ["One moment"] and actions.calls == [("find", {"id": 3})]
    assert textmode.parse_reply("just words").messages == ["just words"]


@pytest.mark.parametrize(
    "bad",
    [
        "<json>{not json}</json>",
        '<json>{"arguments": {}}</json>',
        '<json>{"name": "respond", "arguments": {}}</json>',
        '<json>{"name": "find", "arguments": [1]}</json>',
        # nested beyond Python's recursion limit: a RecursionError, not a ValueError
        '<json>{"name": "find", "arguments": {"a": ' + "[" * 100_000 + "]" * 100_000 + "}}</json>",
    ],
)
def test_bad_actions_are_rejected(bad: str) -> None:
    with pytest.raises(textmode.TextActionError):
        textmode.parse_reply(bad)


def test_observations_round_trip() -> None:
    joined = textmode.observation_text([("a", "one\n\ntwo"), ("b", "three")])
    assert textmode.split_observations(joined, ["a", "b"]) == ["one\n\ntwo", "three"]
    assert textmode.observation_text([("a", "x")]) == "x"


def test_a_tool_call_with_arguments_nested_too_deep_is_a_convention_error() -> None:
    deep = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(ConventionError, match="nested deeper than"):
        parse_tool_call({"type": "tool_call", "id": "c1", "name": "find", "arguments": deep})
    with pytest.raises(ConventionError, match="are not JSON"):
        parse_tool_call({"type": "tool_call", "id": "c1", "name": "find", "arguments": "{x"})


def test_json_blocks_find_what_the_lazy_regex_finds() -> None:
    """`json_blocks` replaced `re.findall(r"<json>(.*?)</json>", text, re.DOTALL)`: same
    blocks for every mix of tags (exhaustively, over short strings of tag pieces)."""
    import itertools
    import re

    lazy = re.compile(r"<json>(.*?)</json>", re.DOTALL)
    pieces = ["<json>", "</json>", "x", "\n", "<json", "json>", "</"]
    for n in range(6):
        for combo in itertools.product(pieces, repeat=n):
            text = "".join(combo)
            assert textmode.json_blocks(text) == lazy.findall(text), text


def test_unclosed_tags_are_a_message_to_the_user() -> None:
    """60 KB of `<json>` without a closing tag (the lazy regex rescanned to the end from
    every tag: quadratic, minutes for a few hundred KB); it is a message to the user."""
    bomb = "<json>" * 10_000
    actions = textmode.parse_reply(bomb)
    assert actions.messages == [bomb] and actions.calls == []
    many = (
        '<json>{"name": "find", "arguments": {}}</json>' * 5_000
        + "</json>" * 10_000
        + "<json>" * 10_000
    )
    assert len(textmode.parse_reply(many).calls) == 5_000
