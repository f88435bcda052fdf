"""Gym actions: text replies and the tool-call shapes an RL framework may send."""

from __future__ import annotations

import json

import pytest

from tau_adapters.protocol import ToolCall
from tau_bench.gym import InvalidActionError, parse_action

OPENAI_CALL = {
    "id": "call_7",
    "type": "function",
    "function": {"name": "get_user_details", "arguments": '{"user_id": "mia_li_3668"}'},
}


def test_openai_tool_call_object_and_json_text():
    for action in (OPENAI_CALL, json.dumps(OPENAI_CALL)):
        call = parse_action(action, "fallback")
        assert isinstance(call, ToolCall)
        assert (call.id, call.name, call.arguments) == (
            "call_7",
            "get_user_details",
            {"user_id": "mia_li_3668"},
        )


def test_flat_call_assistant_message_and_missing_id():
    flat = parse_action({"name": "list_all_airports", "arguments": {}}, "call_3")
    assert isinstance(flat, ToolCall) and flat.id == "call_3" and flat.arguments == {}
    message = {"role": "assistant", "content": None, "tool_calls": [OPENAI_CALL]}
    assert parse_action(message, "x").name == "get_user_details"  # type: ignore[union-attr]
    as_text = parse_action('{"name": "think", "arguments": {"thought": "hm"}}', "call_9")
    assert isinstance(as_text, ToolCall) and as_text.arguments == {"thought": "hm"}


TOO_DEEP = "[" * 100_000 + "]" * 100_000  # Python's decoder raises RecursionError here


@pytest.mark.parametrize("arguments", ["{oops", TOO_DEEP], ids=["bad_syntax", "too_deep"])
def test_undecodable_arguments_are_passed_on(arguments):
    call = parse_action({"function": {"name": "think", "arguments": arguments}}, "c")
    assert isinstance(call, ToolCall) and call.arguments == arguments


@pytest.mark.parametrize(
    "text",
    [
        "Your order has shipped. Anything else?",
        '{"name": "Mia", "zip": "12345"}',  # JSON, but not a tool call: said to the user
        "{not json}",
        "",
        "{" + TOO_DEEP + "}",
    ],
)
def test_other_strings_are_messages(text):
    assert parse_action(text, "c") == text


def test_assistant_message_without_calls_is_its_text():
    assert parse_action({"role": "assistant", "content": "Hello"}, "c") == "Hello"


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ({"tool_calls": [OPENAI_CALL, OPENAI_CALL]}, "this message has 2"),
        ({"function": {"arguments": "{}"}}, "string 'name'"),
        ({"foo": 1}, "must be a tool call"),
        (42, "not int"),
    ],
)
def test_invalid_actions(action, message):
    with pytest.raises(InvalidActionError, match=message):
        parse_action(action, "c")


MALFORMED_TOOL_CALLS = [
    {"tool_calls": 5},
    {"tool_calls": True},
    {"tool_calls": {"x": 1}},
    {"tool_calls": "get_user_details"},
    {"tool_calls": [], "content": [1]},
]


@pytest.mark.parametrize("action", MALFORMED_TOOL_CALLS, ids=json.dumps)
def test_malformed_tool_calls_are_invalid_actions_as_objects_and_as_json_text(action):
    for form in (action, json.dumps(action)):
        with pytest.raises(InvalidActionError):
            parse_action(form, "c")


def test_an_empty_or_null_tool_calls_list_is_the_message_text():
    assert parse_action({"tool_calls": None, "content": "Hi"}, "c") == "Hi"
    assert parse_action({"tool_calls": [], "content": None}, "c") == ""
