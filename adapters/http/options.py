"""The HTTP adapter's options and their `tau run` flags (light: no httpx import)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class HttpOptions(BaseModel):
    """The bot is described by one config file (docs/http-adapter.md)."""

    model_config = ConfigDict(extra="forbid")

    http_config: str | dict[str, Any] | None = Field(
        None,
        description="The bot's config file (YAML or JSON); `tau http init` writes one.",
        json_schema_extra={"path": True},
    )
