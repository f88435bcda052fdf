"""Bare Gemini model names (`gemini-2.5-pro`): which Google service answers them, and how.

Why: τ-bench's seed command names its user model `--user_model gemini-1.5-pro` without a
provider, next to a Dialogflow agent whose Google project and credentials are already
given. litellm guesses `openai` for a bare name; here a bare `gemini-*` name goes

1. to Vertex AI when Google Cloud credentials and a project are at hand: the agent's own
   (`project_id`, `gcp_sa_file` or Application Default Credentials, `location`), else
   `GOOGLE_CLOUD_PROJECT`/`VERTEXAI_PROJECT` with ADC;
2. else to the Gemini API (AI Studio) with `GEMINI_API_KEY` or `GOOGLE_API_KEY`.

Model ids Google has retired (the 1.0 and 1.5 families) are refused up front with the
current ones named, instead of a 404 in every episode.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

CURRENT_MODELS = ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite")
"""Named in the retired-model message (the stable ids at the time of writing)."""

VERTEX_DEFAULT_LOCATION = "us-central1"
VERTEX = "vertex_ai"
AI_STUDIO = "gemini"

_RETIRED = re.compile(r"^(?:models/)?gemini-(?:1\.0|1\.5|pro$|pro-vision|ultra)", re.IGNORECASE)
_PROJECT_ENV = ("GOOGLE_CLOUD_PROJECT", "VERTEXAI_PROJECT", "VERTEX_PROJECT")
_KEY_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
_AGENT_NAME = re.compile(r"^projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/")


class GeminiModelError(ValueError):
    """A Gemini model that cannot be used as given (retired, or no credentials)."""


def _base_name(model: str) -> str:
    return model.rsplit("/", 1)[-1]


def is_gemini(model: str) -> bool:
    """Whether `model` (with or without a provider prefix) names a Gemini model."""
    return _base_name(model).lower().startswith("gemini")


def check_not_retired(model: str) -> None:
    """Raise `GeminiModelError` naming current models when `model` is a retired Gemini id."""
    if is_gemini(model) and _RETIRED.match(_base_name(model)):
        raise GeminiModelError(
            f"{model} is retired by Google (every call would answer 404 Not Found); "
            f"use a current model such as {', '.join(CURRENT_MODELS)}"
        )


def _agent_google(agent_options: Mapping[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(project, location, key file) of a Google-hosted agent's options, when given."""
    project = agent_options.get("project_id") or None
    location = agent_options.get("location") or None
    match = _AGENT_NAME.match(str(agent_options.get("agent_id") or ""))
    if match:
        project = project or match["project"]
        location = location or match["location"]
    key_file = agent_options.get("gcp_sa_file") or None
    return (
        str(project) if project else None,
        str(location) if location else None,
        str(key_file) if key_file else None,
    )


def resolve_gemini(
    model: str,
    provider: str | None,
    agent_options: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Options to add to a model's LLM options (`provider`, `llm_extra`) so a bare Gemini
    name reaches Google; empty when `model` is not a bare Gemini name or already has a
    provider. Raises `GeminiModelError` for a retired id or when no credentials exist."""
    if not is_gemini(model):
        return {}
    check_not_retired(model)
    if provider or "/" in model:
        return {}
    env = os.environ if env is None else env
    project, location, key_file = _agent_google(agent_options)
    project = project or next((env[k] for k in _PROJECT_ENV if env.get(k)), None)
    if project:
        extra: dict[str, Any] = {
            "vertex_project": project,
            "vertex_location": location or VERTEX_DEFAULT_LOCATION,
        }
        if key_file:
            extra["vertex_credentials"] = key_file
        return {"provider": VERTEX, "llm_extra": extra}
    if any(env.get(k) for k in _KEY_ENV):
        return {"provider": AI_STUDIO}
    raise GeminiModelError(
        f"{model}: no Google credentials: set GEMINI_API_KEY (or GOOGLE_API_KEY) for the "
        "Gemini API, or give a Google Cloud project (the agent's --project_id, or "
        "GOOGLE_CLOUD_PROJECT) for Vertex AI"
    )


def describe_route(options: Mapping[str, Any]) -> str:
    """Where a model's calls go, for messages (`Vertex AI, project p, us-central1`)."""
    provider = options.get("provider")
    extra = options.get("llm_extra") or {}
    if provider == VERTEX:
        return f"Vertex AI, project {extra.get('vertex_project')}, {extra.get('vertex_location')}"
    if provider == AI_STUDIO:
        return "Gemini API"
    return str(provider or "provider from the model name")
