"""A fake model provider behind respx: OpenAI, Anthropic and Gemini wire shapes.

Real litellm calls go out over httpx; respx answers them. Each request is turned into a
provider-neutral `Request` (system prompt, messages, tool names) and handed to a
`brain` - a function the test writes - which decides the reply from what it was sent.
The reply is encoded back in the provider's own response shape.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import respx

from tau_adapters import jsonsafe
from tau_bench.fakes.openai_server import ChatReply, ChatRequest, completion_body, error_body
from tau_bench.fakes.openai_server import tokens as _tokens
from tau_bench.runner.preflight import PING_TEXT

OPENAI_URL = re.compile(r"^https://api\.openai\.com/v1/chat/completions$")
LOCAL_OPENAI_URL = re.compile(r"^http://127\.0\.0\.1:\d+/v1/chat/completions$")
ANTHROPIC_URL = re.compile(r"^https://api\.anthropic\.com/v1/messages$")
GEMINI_URL = re.compile(
    r"^https://generativelanguage\.googleapis\.com/v1beta/models/(?P<model>[^:]+):generateContent"
)


@dataclass
class Request:
    """What one chat request asked, whatever the provider's wire format."""

    provider: str
    model: str
    system: str
    messages: list[dict[str, Any]]
    tools: list[str]
    body: dict[str, Any]
    url: str
    headers: dict[str, str]

    @property
    def last(self) -> dict[str, Any]:
        return self.messages[-1] if self.messages else {}

    @property
    def last_text(self) -> str:
        return str(self.last.get("content") or "")

    def texts(self, role: str) -> list[str]:
        return [str(m.get("content") or "") for m in self.messages if m.get("role") == role]


Reply = ChatReply
"""What the fake model answers: text and/or tool calls, or an HTTP error (the fake OpenAI
server's reply type, so one brain serves respx and the real server alike)."""


Brain = Callable[[Request], Reply]


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                if "text" in part:
                    parts.append(str(part["text"]))
                elif isinstance(part.get("content"), str | list):
                    parts.append(_text_of(part["content"]))
            else:
                parts.append(str(part))
        return "".join(parts)
    return str(content)


def _loads(text: str) -> Any:
    return jsonsafe.loads_or_text(text or "{}")


def _openai_request(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]], list[str]]:
    system, messages = [], []
    for m in body.get("messages", []):
        if m["role"] in ("system", "developer"):
            system.append(_text_of(m.get("content")))
            continue
        out = {"role": m["role"], "content": _text_of(m.get("content"))}
        if m.get("tool_calls"):
            out["tool_calls"] = [
                {
                    "id": c["id"],
                    "name": c["function"]["name"],
                    "arguments": _loads(c["function"]["arguments"]),
                }
                for c in m["tool_calls"]
            ]
        if m["role"] == "tool":
            out["tool_call_id"] = m.get("tool_call_id")
        messages.append(out)
    tools = [t["function"]["name"] for t in body.get("tools") or []]
    return "\n".join(system), messages, tools


def _anthropic_request(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]], list[str]]:
    system = _text_of(body.get("system"))
    messages: list[dict[str, Any]] = []
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            messages.append({"role": m["role"], "content": content})
            continue
        texts, calls = [], []
        for block in content or []:
            kind = block.get("type")
            if kind == "text":
                texts.append(block["text"])
            elif kind == "tool_use":
                calls.append(
                    {"id": block["id"], "name": block["name"], "arguments": block["input"]}
                )
            elif kind == "tool_result":
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": block["tool_use_id"],
                        "content": _text_of(block.get("content")),
                    }
                )
        if texts or calls:
            out: dict[str, Any] = {"role": m["role"], "content": "".join(texts)}
            if calls:
                out["tool_calls"] = calls
            messages.append(out)
    tools = [t["name"] for t in body.get("tools") or []]
    return system, messages, tools


def _gemini_request(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]], list[str]]:
    system = _text_of(
        (body.get("systemInstruction") or body.get("system_instruction") or {}).get("parts")
    )
    messages: list[dict[str, Any]] = []
    for c in body.get("contents", []):
        role = "assistant" if c.get("role") == "model" else "user"
        texts, calls = [], []
        for part in c.get("parts", []):
            call = part.get("functionCall") or part.get("function_call")
            response_part = part.get("functionResponse") or part.get("function_response")
            if "text" in part:
                texts.append(part["text"])
            elif call:
                calls.append(
                    {
                        "id": call["name"],
                        "name": call["name"],
                        "arguments": call.get("args", {}),
                        "signature": part.get("thoughtSignature") or part.get("thought_signature"),
                    }
                )
            elif response_part:
                fr = response_part
                response = fr.get("response", {})
                content = (
                    response.get("content", response) if isinstance(response, dict) else response
                )
                messages.append(
                    {
                        "role": "tool",
                        "name": fr["name"],
                        "content": content if isinstance(content, str) else json.dumps(content),
                    }
                )
        if texts or calls:
            out: dict[str, Any] = {"role": role, "content": "".join(texts)}
            if calls:
                out["tool_calls"] = calls
            messages.append(out)
    tools = [
        d["name"]
        for group in body.get("tools") or []
        for d in group.get("functionDeclarations", group.get("function_declarations", []))
    ]
    return system, messages, tools


class FakeLLM:
    """Answers litellm's HTTP calls for all three providers with `brain`'s replies."""

    def __init__(self, router: respx.MockRouter | None = None, brain: Brain | None = None) -> None:
        self.brain: Brain = brain or (lambda request: Reply(text="ok"))
        self.requests: list[Request] = []
        self._ids = itertools.count(1)
        self.failures: list[str] = []
        if router is None:
            return
        router.post(url__regex=OPENAI_URL.pattern).mock(side_effect=self._guard(self._openai))
        router.post(url__regex=LOCAL_OPENAI_URL.pattern).mock(side_effect=self._guard(self._openai))
        router.post(url__regex=ANTHROPIC_URL.pattern).mock(side_effect=self._guard(self._anthropic))
        router.post(url__regex=GEMINI_URL.pattern).mock(side_effect=self._guard(self._gemini))

    def _guard(self, handler: Callable[..., httpx.Response]) -> Callable[..., httpx.Response]:
        """A failing assertion in a brain must fail the test, not look like a network
        error that litellm would retry: answer 400 and remember it for the fixture."""

        def guarded(http: httpx.Request, **kwargs: Any) -> httpx.Response:
            try:
                return handler(http, **kwargs)
            except Exception as exc:
                self.failures.append(f"{type(exc).__name__}: {exc}")
                return httpx.Response(400, json={"error": {"message": "fake brain failed"}})

        return guarded

    # -- plumbing

    def _ask(
        self, provider: str, model: str, parsed: tuple[Any, Any, Any], http: httpx.Request
    ) -> tuple[Reply, Request]:
        system, messages, tools = parsed
        if [_text_of(m.get("content")) for m in messages] == [PING_TEXT]:
            ping = Request(provider, model, system, messages, tools, {}, str(http.url), {})
            return Reply(text="OK"), ping  # the pre-flight call, not the test's
        request = Request(
            provider=provider,
            model=model,
            system=system,
            messages=messages,
            tools=tools,
            body=json.loads(http.content),
            url=str(http.url),
            headers={k.lower(): v for k, v in http.headers.items()},
        )
        self.requests.append(request)
        return self.brain(request), request

    def _error(self, reply: Reply) -> httpx.Response:
        return httpx.Response(reply.status, headers=reply.headers, json=error_body(reply))

    def _usage(self, request: Request, reply: Reply) -> tuple[int, int]:
        out = (reply.text or "") + json.dumps(reply.tool_calls)
        return _tokens(json.dumps(request.body)), _tokens(out)

    # -- providers

    def _openai(self, http: httpx.Request, **_: Any) -> httpx.Response:
        body = json.loads(http.content)
        reply, _ = self._ask("openai", body["model"], _openai_request(body), http)
        if reply.status != 200:
            return self._error(reply)
        encoded = completion_body(reply, ChatRequest(body), next(self._ids))
        return httpx.Response(200, json=encoded)

    def respond(self, chat: ChatRequest) -> ChatReply:
        """The reply function of the real fake OpenAI server (`tau_bench.fakes`): the same
        brain and request log as the respx route, a failing brain a 400 remembered."""
        http = httpx.Request("POST", chat.url, headers=chat.headers, json=chat.body)
        try:
            reply, _ = self._ask("openai", chat.model, _openai_request(chat.body), http)
        except Exception as exc:
            self.failures.append(f"{type(exc).__name__}: {exc}")
            return ChatReply(status=400, error="fake brain failed")
        return reply

    def _anthropic(self, http: httpx.Request, **_: Any) -> httpx.Response:
        body = json.loads(http.content)
        reply, request = self._ask("anthropic", body["model"], _anthropic_request(body), http)
        if reply.status != 200:
            return self._error(reply)
        prompt, completion = self._usage(request, reply)
        content: list[dict[str, Any]] = []
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        for name, args in reply.tool_calls:
            content.append(
                {"type": "tool_use", "id": f"toolu_{next(self._ids)}", "name": name, "input": args}
            )
        return httpx.Response(
            200,
            json={
                "id": f"msg_{next(self._ids)}",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": content,
                "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": prompt, "output_tokens": completion},
            },
        )

    def _gemini(self, http: httpx.Request, **_: Any) -> httpx.Response:
        body = json.loads(http.content)
        match = GEMINI_URL.match(str(http.url))
        model = match.group("model") if match else "gemini"
        reply, request = self._ask("gemini", model, _gemini_request(body), http)
        if reply.status != 200:
            return self._error(reply)
        prompt, completion = self._usage(request, reply)
        parts: list[dict[str, Any]] = []
        if reply.text:
            parts.append({"text": reply.text})
        for name, args in reply.tool_calls:
            # Gemini thinking models sign function calls; the signature must come back.
            parts.append(
                {"functionCall": {"name": name, "args": args}, "thoughtSignature": f"sig-{name}"}
            )
        return httpx.Response(
            200,
            json={
                "candidates": [
                    {
                        "content": {"role": "model", "parts": parts},
                        "finishReason": "STOP",
                        "index": 0,
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": prompt,
                    "candidatesTokenCount": completion,
                    "totalTokenCount": prompt + completion,
                },
                "modelVersion": model,
            },
        )


# ---------------------------------------------------------------------------- fixture

TEST_KEYS = {
    "OPENAI_API_KEY": "sk-test-openai-0000",
    "ANTHROPIC_API_KEY": "sk-ant-test-0000",
    "GEMINI_API_KEY": "gemini-test-key-0000",
}


@pytest.fixture
def llm_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Dummy keys, zero retry waits and no provider caps, restored afterwards."""
    from tau_bench import llm

    for name, value in TEST_KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(
        llm.config, "DEFAULT_RETRY", llm.RetryPolicy(initial_wait=0.0, max_wait=0.0, jitter=0.0)
    )
    llm.set_provider_limits({})
    yield
    llm.set_provider_limits({})


@pytest.fixture
def fake_llm(llm_env: None) -> Iterator[FakeLLM]:
    """`llm_env` plus every HTTP call answered by a `FakeLLM` (nothing reaches the network)."""
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as router:
        fake = FakeLLM(router)
        yield fake
    assert not fake.failures, f"the fake model's brain failed: {fake.failures}"
