"""The A2A adapter's options (light imports only: read by the registry and the CLI).

Every field is a `tau run --agent-strategy a2a` flag (`--field-name` and `--field_name`);
secret fields are marked so the runner can redact them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tau_adapters.options import (
    MAX_ATTEMPTS,
    MAX_ITEMS,
    MAX_RESPONSE_BYTES,
    MAX_SECONDS,
    check_key_templates,
    key_template_list,
)

ToolMode = Literal["auto", "extension", "text", "none"]


class Options(BaseModel):
    """How to reach the agent, how to pass tools, and how hard to try."""

    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    agent_url: str = Field(
        description="Base URL of the A2A agent; its card is read from <agent_url><card_path>.",
        json_schema_extra={"flags": ["--a2a-url"]},
    )
    card_path: str = Field(
        default="/.well-known/agent-card.json",
        description="Path of the agent card, relative to agent_url.",
    )
    bearer_token: str | None = Field(
        default=None,
        repr=False,
        description="Token for an HTTP bearer / OAuth2 / OpenID Connect scheme of the card.",
        json_schema_extra={"secret": True, "flags": ["--a2a-token"]},
    )
    api_key: str | None = Field(
        default=None,
        repr=False,
        description="Key for an apiKey (header) scheme of the card.",
        json_schema_extra={"secret": True, "flags": ["--a2a-api-key"]},
    )
    tool_mode: ToolMode = Field(
        default="auto",
        description="extension: tool calls as DataParts (the card must declare the "
        "client-tools extension); text: tool schemas as text, calls parsed from <json> blocks "
        "(the τ³ A2A experiment's convention); none: plain conversation (the agent calls "
        "tools itself, e.g. through `tau tools serve`); auto: extension when the card "
        "declares it, else none.",
    )
    streaming: bool | None = Field(
        default=None,
        description="Use message/stream (SSE); default: when the card says it streams.",
    )
    message_metadata: list[str] = Field(
        default_factory=list,
        description="KEY=TEMPLATE metadata of each conversation's first message; templates "
        "may use {task_id}, {user_id}, {trial}, {session_id}, {env}, {task_split}.",
        json_schema_extra={"flags": ["--a2a-metadata"]},
    )
    send_policy: bool = Field(
        default=False,
        description="Extension mode: also send the domain policy with the tool schemas "
        "(text mode always sends it, as the τ³ experiment did).",
    )
    timeout: float = Field(
        default=120.0,
        gt=0,
        le=MAX_SECONDS,
        description="Total deadline in seconds of one call, SSE stream and polling included.",
    )
    max_attempts: int = Field(
        default=4,
        ge=1,
        le=MAX_ATTEMPTS,
        description="Tries of a call refused before the agent saw it.",
    )
    max_response_bytes: int = Field(
        default=4 * 1024 * 1024,
        ge=1024,
        le=MAX_RESPONSE_BYTES,
        description="Largest answer read from the agent, in bytes: the agent card, one "
        "reply, one poll, one whole SSE stream (decompressed). Past it the call fails as a "
        "protocol error.",
    )
    max_events: int = Field(
        default=10_000,
        ge=1,
        le=MAX_ITEMS,
        description="Most stream events kept for one message; past it the call fails as "
        "a protocol error.",
    )
    retry_initial: float = Field(
        default=0.5, ge=0, le=MAX_SECONDS, description="First backoff delay (s)."
    )
    retry_max: float = Field(
        default=30.0, ge=0, le=MAX_SECONDS, description="Longest backoff delay (s)."
    )
    task_split: str = Field(default="test", description="Value of {task_split} in templates.")

    @field_validator("agent_url")
    @classmethod
    def _url(cls, value: str) -> str:
        value = value.strip()
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"must be an http(s) URL, got {value!r}")
        return value.rstrip("/")

    @field_validator("card_path")
    @classmethod
    def _path(cls, value: str) -> str:
        return "/" + value.strip().lstrip("/")

    @field_validator("message_metadata", mode="before")
    @classmethod
    def _message_metadata_list(cls, value: Any) -> Any:
        return key_template_list(value)

    @field_validator("message_metadata")
    @classmethod
    def _message_metadata_check(cls, value: list[str]) -> list[str]:
        return check_key_templates(value)

    def metadata_pairs(self) -> list[tuple[str, str]]:
        return [
            (key.strip(), template)
            for key, _, template in (e.partition("=") for e in self.message_metadata)
        ]
