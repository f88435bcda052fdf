from __future__ import annotations

import pytest

from adapters.http.config import ResponseMapping, ToolCallMapping
from adapters.http.mapping import MappingError, map_reply

M = ResponseMapping(
    messages="out[].text",
    tool_calls="calls",
    tool_call=ToolCallMapping(id="cid", name="fn.name", arguments="fn.args"),
    end="bye",
    handoff="human",
)


def test_texts_calls_and_flags() -> None:
    doc = {
        "out": [{"text": "Hello"}, {"text": None}, {"text": "Bye"}],
        "calls": [
            {"cid": "a", "fn": {"name": "get_user", "args": {"user_id": "u1"}}},
            {"cid": "b", "fn": {"name": "think", "args": '{"thought": "x"}'}},
        ],
        "bye": True,
    }
    reply = map_reply(doc, M)
    assert reply.messages == ["Hello", "Bye"]
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("a", "get_user", {"user_id": "u1"}),
        ("b", "think", {"thought": "x"}),
    ]
    assert reply.end and not reply.handoff


def test_missing_ids_are_numbered_and_empty_args_are_objects() -> None:
    doc = {"calls": [{"fn": {"name": "x"}}, {"fn": {"name": "y", "args": ""}}]}
    reply = map_reply(doc, M, counter=4)
    assert [(c.id, c.arguments) for c in reply.tool_calls] == [("call_5", {}), ("call_6", {})]


def test_single_string_message_and_single_call_object() -> None:
    mapping = ResponseMapping(messages="text", tool_calls="call")
    reply = map_reply({"text": "hi", "call": {"id": "1", "name": "n", "arguments": {}}}, mapping)
    assert reply.messages == ["hi"] and reply.tool_calls[0].name == "n"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"out": []}, "holds no message and no tool call"),
        ({"out": [{"text": 3}]}, "should give strings, got int"),
        ({"calls": [{"cid": "a", "fn": {}}]}, "has no name"),
        ({"calls": [{"fn": {"name": "x", "args": "{not json"}}]}, "not JSON"),
        ({"calls": [{"fn": {"name": "x", "args": [1, 2]}}]}, "should be an object, got list"),
        ({"calls": "x"}, "should give a list of objects"),
        ({"calls": [{"cid": {"x": 1}, "fn": {"name": "x"}}]}, "has an id that is a dict"),
        ({"calls": [{"cid": [1], "fn": {"name": "x"}}]}, "has an id that is a list"),
        ({"calls": [{"cid": True, "fn": {"name": "x"}}]}, "has an id that is a bool"),
        ("just text", "holds no message"),
    ],
)
def test_replies_that_do_not_fit(doc: object, message: str) -> None:
    with pytest.raises(MappingError, match=message):
        map_reply(doc, M)


def test_a_numeric_id_is_its_text() -> None:
    reply = map_reply({"calls": [{"cid": 7, "fn": {"name": "x"}}]}, M)
    assert reply.tool_calls[0].id == "7"


def test_allow_empty() -> None:
    assert map_reply({}, M, allow_empty=True).messages == []
