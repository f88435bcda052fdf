"""Reading responses: any number of messages, any kinds, any order; never crash."""

from __future__ import annotations

from google.cloud import dialogflowcx_v3beta1 as cx

from adapters.dialogflow.responses import parse_response


def _response(*messages: cx.ResponseMessage, **result: object) -> cx.DetectIntentResponse:
    return cx.DetectIntentResponse(
        query_result=cx.QueryResult(response_messages=list(messages), **result)
    )


def _text(t: str) -> cx.ResponseMessage:
    return cx.ResponseMessage(text=cx.ResponseMessage.Text(text=[t]))


def _call(action: str, **args: object) -> cx.ResponseMessage:
    return cx.ResponseMessage(
        tool_call=cx.ToolCall(
            tool=f"projects/p/locations/l/agents/a/tools/{action}",
            action=action,
            input_parameters=args,
        )
    )


def test_empty_response() -> None:
    parsed = parse_response(_response())
    assert parsed.texts == [] and parsed.tool_calls == [] and not parsed.end_interaction
    assert parsed.generative_info is None


def test_mixed_messages_in_any_order() -> None:
    parsed = parse_response(
        _response(
            cx.ResponseMessage(payload={"richContent": [[{"type": "chips"}]]}),
            _call("get_user_details", user_id="u1"),
            _text("Let me check."),
            cx.ResponseMessage(knowledge_info_card=cx.ResponseMessage.KnowledgeInfoCard()),
            _call("get_order_details", order_id="#W1"),
            cx.ResponseMessage(output_audio_text=cx.ResponseMessage.OutputAudioText(text="hi")),
            _text("Anything else?"),
            cx.ResponseMessage(conversation_success=cx.ResponseMessage.ConversationSuccess()),
            cx.ResponseMessage(),  # nothing set at all
            cx.ResponseMessage(end_interaction=cx.ResponseMessage.EndInteraction()),
        )
    )
    assert parsed.texts == ["Let me check.", "Anything else?"]
    assert [c.action for c in parsed.tool_calls] == ["get_user_details", "get_order_details"]
    assert parsed.tool_calls[0].tool.endswith("/tools/get_user_details")
    assert dict(parsed.tool_calls[1].input_parameters) == {"order_id": "#W1"}
    assert parsed.end_interaction and parsed.conversation_success and not parsed.handoff
    kinds = [o["kind"] for o in parsed.other]
    assert kinds == [
        "payload",
        "knowledge_info_card",
        "output_audio_text",
        "conversation_success",
        "empty",
    ]
    assert parsed.other[0]["message"]["payload"] == {"richContent": [[{"type": "chips"}]]}


def test_handoff_and_generative_info() -> None:
    parsed = parse_response(
        _response(
            cx.ResponseMessage(
                live_agent_handoff=cx.ResponseMessage.LiveAgentHandoff(metadata={"reason": "x"})
            ),
            generative_info=cx.GenerativeInfo(
                current_playbooks=["projects/p/locations/l/agents/a/playbooks/x"]
            ),
            match=cx.Match(match_type=cx.Match.MatchType.PLAYBOOK),
        )
    )
    assert parsed.handoff and not parsed.end_interaction
    assert parsed.generative_info == {
        "current_playbooks": ["projects/p/locations/l/agents/a/playbooks/x"]
    }
    assert parsed.match_type == "PLAYBOOK"


def test_multi_variant_text_is_joined_and_blank_text_dropped() -> None:
    parsed = parse_response(
        _response(cx.ResponseMessage(text=cx.ResponseMessage.Text(text=["a", "b"])), _text(""))
    )
    assert parsed.texts == ["a b"]
