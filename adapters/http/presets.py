"""Shipped starter configurations. A config says `preset: NAME` and overrides keys.

Presets are kept as commented YAML text, so `tau http init --preset NAME` writes a file a
person can read and edit; `load_preset` parses the same text.
"""

from __future__ import annotations

from typing import Any

import yaml

OPENAI_CHAT = """\
# Any OpenAI chat-completions compatible endpoint (OpenAI, vLLM, Ollama, a LiteLLM proxy...).
# Stateless: every call carries the whole conversation, the domain policy as the system
# prompt, and the domain tools; tool results go back as role=tool messages.
base_url: ${OPENAI_BASE_URL:-https://api.openai.com/v1}
headers:
  Authorization: Bearer ${OPENAI_API_KEY}
timeout:
  connect: 10
  read: 120
session:
  mode: stateless
message:
  method: POST
  path: /chat/completions
  body:
    model: ${OPENAI_MODEL:-gpt-4o-mini}
    messages: "{{ messages }}"
    tools: "{{ tools }}"
    temperature: 0
tool_results:
  mode: batch          # the next call's `messages` already holds the tool messages
response:
  messages: choices[0].message.content
  tool_calls: choices[0].message.tool_calls
  tool_call:
    id: id
    name: function.name
    arguments: function.arguments   # a JSON string here; objects are accepted too
  usage:
    prompt_tokens: usage.prompt_tokens
    completion_tokens: usage.completion_tokens
"""

RASA_REST = """\
# Rasa's REST channel (rasa run --enable-api; channel `rest` in credentials.yml).
# In: {sender, message, metadata}. Out: a list of {recipient_id, text} or
# {recipient_id, custom}. Tool calls travel in custom payloads:
#   {"custom": {"tool_call": {"id": "c1", "name": "get_user_details", "arguments": {...}}}}
#   {"custom": {"end_conversation": true}}   {"custom": {"handoff": true}}
# Tool results come back as the message "/tool_results" with the results in metadata,
# for a custom action to read from tracker.latest_message["metadata"].
base_url: ${RASA_URL:-http://localhost:5005}
session:
  mode: client
  id: "tau-{{ session_id }}"
message:
  method: POST
  path: /webhooks/rest/webhook
  body:
    sender: "{{ bot_session_id }}"
    message: "{{ message }}"
    metadata:
      tau:
        domain: "{{ domain }}"
        task_id: "{{ task_id }}"
        user_id: "{{ user_id }}"
        trial: "{{ trial }}"
tool_results:
  mode: batch
  body:
    sender: "{{ bot_session_id }}"
    message: /tool_results
    metadata:
      tool_results: "{{ tool_results }}"
response:
  messages: "[].text"
  tool_calls: "[].custom.tool_call"
  tool_call:
    id: id
    name: name
    arguments: arguments
  end: "[?custom.end_conversation]"
  handoff: "[?custom.handoff]"
"""

GENERIC_JSON = """\
# A JSON bot with server-created sessions:
#   POST   /sessions                     -> {"session_id": "..."}
#   POST   /sessions/{id}/messages       {"text": "..."} -> reply
#   POST   /sessions/{id}/tool-results   {"results": [{tool_call_id, name, content, is_error}]} -> reply
#   DELETE /sessions/{id}
# A reply: {"messages": ["..."], "tool_calls": [{"id", "name", "arguments"}],
#           "end_conversation": false, "handoff": false}
base_url: ${BOT_URL}
headers:
  Authorization: Bearer ${BOT_TOKEN}
session:
  mode: server
  start:
    method: POST
    path: /sessions
    body:
      client_session_id: "{{ session_id }}"
      domain: "{{ domain }}"
      task_id: "{{ task_id }}"
      task_split: "{{ task_split }}"
      user_id: "{{ user_id }}"
      trial: "{{ trial }}"
  id_path: session_id
  end:
    method: DELETE
    path: "/sessions/{{ bot_session_id }}"
message:
  method: POST
  path: "/sessions/{{ bot_session_id }}/messages"
  body:
    text: "{{ message }}"
tool_results:
  mode: batch
  path: "/sessions/{{ bot_session_id }}/tool-results"
  body:
    results: "{{ tool_results }}"
response:
  messages: messages
  tool_calls: tool_calls
  tool_call:
    id: id
    name: name
    arguments: arguments
  end: end_conversation
  handoff: handoff
"""

PRESETS: dict[str, str] = {
    "openai-chat": OPENAI_CHAT,
    "rasa-rest": RASA_REST,
    "generic-json": GENERIC_JSON,
}


class UnknownPresetError(ValueError):
    pass


def preset_text(name: str) -> str:
    """The commented YAML of preset `name`."""
    if name not in PRESETS:
        raise UnknownPresetError(
            f"unknown preset {name!r} (available: {', '.join(sorted(PRESETS))})"
        )
    return PRESETS[name]


def load_preset(name: str) -> dict[str, Any]:
    data = yaml.safe_load(preset_text(name))
    assert isinstance(data, dict)
    return data
