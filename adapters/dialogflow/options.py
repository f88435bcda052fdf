"""The Dialogflow CX adapter's options and their `tau run` flags (light: no Google import).

`adapters.dialogflow.config.load_config` turns them, with the run's settings, into a
validated `DialogflowConfig`; this model is what users and YAML configs may set.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DialogflowOptions(BaseModel):
    """Where the agent lives, how to reach it, and how hard to try."""

    model_config = ConfigDict(extra="forbid")

    agent_id: str | None = Field(
        None, description="The agent's id, or its full name projects/P/locations/L/agents/A."
    )
    project_id: str | None = Field(None, description="The Google Cloud project of the agent.")
    location: str | None = Field(None, description="The agent's region (default: global).")
    environment: str | None = Field(None, description="An agent environment (default: draft).")
    language_code: str | None = Field(None, description="Language of the session (default en).")
    gcp_sa_file: str | None = Field(
        None,
        description="Google credentials file: service-account key, ADC user credentials or "
        "external account (default: Application Default Credentials).",
        json_schema_extra={"path": True},
    )
    api_endpoint: str | None = Field(None, description="API endpoint (default: by location).")
    session_params: list[str] = Field(
        default_factory=list,
        description="KEY=TEMPLATE session parameter (repeatable); {task_id}, {env}, ... filled in.",
        json_schema_extra={"flags": ["--session-param"]},
    )
    session_ttl: int | None = Field(None, description="Session time-to-live in seconds.")
    emulator: str | None = Field(
        None, description="host:port of a local emulator (insecure channel)."
    )
    timeout: float | None = Field(None, description="Seconds per request (default 60).")
    call_deadline: float | None = Field(
        None, description="Seconds for one call with all its retries and waits (default 300)."
    )
    max_attempts: int | None = Field(None, description="Attempts per request (default 10).")
    retry_initial: float | None = Field(None, description="First retry delay, seconds.")
    retry_max: float | None = Field(None, description="Longest retry delay, seconds.")
    ambiguous_retries: int | None = Field(
        None, description="Retries of DEADLINE_EXCEEDED/INTERNAL (default 1)."
    )
    rate_limit: float | None = Field(None, description="Requests per second, shared by episodes.")
    response_view: str | None = Field(None, description="default, basic or full.")
    quota_project_id: str | None = Field(None, description="Project billed for quota.")
    task_params: bool | None = Field(
        None, description="Send env/task_id/trial as session parameters (on with --emulator)."
    )
    text_limit: int | None = Field(
        None,
        description="Longest text input the agent takes, characters (default 256; "
        "no limit with --emulator).",
    )
    long_text: str | None = Field(
        None,
        description="A longer user message: fail (the episode, as a platform limit; "
        "default) or split (at sentence boundaries, into consecutive messages).",
    )
    max_response_mb: int | None = Field(
        None,
        description="Largest answer accepted from the service, MiB (default 32); a larger "
        "one fails the episode as a protocol error.",
    )
    trace: str | None = Field(
        None,
        description="compact (default: texts, tool calls, timings) or full (every "
        "request and response, generative info).",
    )
