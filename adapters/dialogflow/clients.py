"""Make the asyncio gRPC clients: the real service (TLS + Google credentials) or an
emulator (plain-text channel, no credentials at all).

The client library has no emulator mode, so for an emulator we build the
`…GrpcAsyncIOTransport` around our own `grpc.aio.insecure_channel`; with a channel given,
the library ignores credentials and never looks for ADC. aio channels belong to the event
loop that is running when they are created, so call these from inside that loop.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.dialogflow.config import DialogflowConfig
from tau_adapters.protocol import AdapterAuthError, AdapterConfigError

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
SERVICES = ("sessions", "tools", "playbooks", "agents")


def _classes(service: str) -> tuple[Any, Any]:
    """(AsyncClient class, GrpcAsyncIOTransport class) of a v3beta1 service."""
    from google.cloud import dialogflowcx_v3beta1 as cx

    if service == "sessions":
        from google.cloud.dialogflowcx_v3beta1.services.sessions.transports import (
            SessionsGrpcAsyncIOTransport,
        )

        return cx.SessionsAsyncClient, SessionsGrpcAsyncIOTransport
    if service == "tools":
        from google.cloud.dialogflowcx_v3beta1.services.tools.transports import (
            ToolsGrpcAsyncIOTransport,
        )

        return cx.ToolsAsyncClient, ToolsGrpcAsyncIOTransport
    if service == "playbooks":
        from google.cloud.dialogflowcx_v3beta1.services.playbooks.transports import (
            PlaybooksGrpcAsyncIOTransport,
        )

        return cx.PlaybooksAsyncClient, PlaybooksGrpcAsyncIOTransport
    if service == "agents":
        from google.cloud.dialogflowcx_v3beta1.services.agents.transports import (
            AgentsGrpcAsyncIOTransport,
        )

        return cx.AgentsAsyncClient, AgentsGrpcAsyncIOTransport
    raise ValueError(f"unknown service {service!r}")


CREDENTIAL_TYPES = (
    "service_account",
    "authorized_user",
    "external_account",
    "external_account_authorized_user",
    "impersonated_service_account",
)


def load_credentials(config: DialogflowConfig) -> Any:
    """Credentials from the configured file, or None (then ADC, which reads the same
    kinds of file from GOOGLE_APPLICATION_CREDENTIALS or gcloud's ADC path, or asks the
    metadata server). Every file type google.auth knows is accepted: a service-account
    key, ADC user credentials (`gcloud auth application-default login`), an external
    account (workload identity federation), impersonation. Loading makes no call."""
    if not config.credentials_file:
        return None
    import google.auth
    from google.auth import exceptions as auth_exceptions

    try:
        info = json.loads(Path(config.credentials_file).read_text(encoding="utf-8"))
        if isinstance(info, dict) and info.get("type") == "external_account":
            credentials = _external_account(info)
            if config.quota_project_id:
                credentials = credentials.with_quota_project(config.quota_project_id)
        else:
            credentials, _ = google.auth.load_credentials_from_file(
                config.credentials_file,
                scopes=list(SCOPES),
                quota_project_id=config.quota_project_id,
            )
    except (auth_exceptions.GoogleAuthError, ValueError, KeyError, OSError) as exc:
        # The library's messages name missing fields, never key material; still, keep
        # only the exception type so nothing from the file can leak into logs.
        raise AdapterConfigError(
            f"dialogflow: {config.credentials_file} is not a usable Google credentials file "
            f"(expected one of: {', '.join(CREDENTIAL_TYPES)}; {type(exc).__name__})"
        ) from None
    return credentials


def _external_account(info: dict[str, Any]) -> Any:
    """Workload identity federation credentials, built without the project-id lookup
    google.auth's loader makes (a token exchange: a network call at load time)."""
    from google.auth import aws, identity_pool, pluggable

    source = info.get("credential_source") or {}
    if str(source.get("environment_id", "")).startswith("aws"):
        return aws.Credentials.from_info(info, scopes=list(SCOPES))
    if "executable" in source:
        return pluggable.Credentials.from_info(info, scopes=list(SCOPES))
    return identity_pool.Credentials.from_info(info, scopes=list(SCOPES))


def _default_credentials(config: DialogflowConfig) -> Any:
    import google.auth
    from google.auth import exceptions as auth_exceptions

    try:
        credentials, _ = google.auth.default(
            scopes=list(SCOPES), quota_project_id=config.quota_project_id
        )
    except auth_exceptions.DefaultCredentialsError:
        raise AdapterAuthError(
            "dialogflow: no Google credentials found: run `gcloud auth application-default "
            "login`, set GOOGLE_APPLICATION_CREDENTIALS, or pass --gcp-sa-file "
            "(or use --emulator for a local rehearsal)"
        ) from None
    return credentials


@dataclass
class Clients:
    """One asyncio client per service, sharing credentials; `close` releases channels."""

    sessions: Any
    tools: Any
    playbooks: Any
    agents: Any
    loop: asyncio.AbstractEventLoop

    async def close(self) -> None:
        for client in (self.sessions, self.tools, self.playbooks, self.agents):
            try:
                await client.transport.close()
            except Exception:
                pass


def make_client(service: str, config: DialogflowConfig, credentials: Any = None) -> Any:
    """One async client of `service` for `config` (must run inside the event loop)."""
    client_cls, transport_cls = _classes(service)
    if config.emulator:
        import grpc

        channel = grpc.aio.insecure_channel(config.emulator)
        return client_cls(transport=transport_cls(channel=channel))
    from google.api_core.client_options import ClientOptions

    options = ClientOptions(api_endpoint=config.api_endpoint)
    if config.quota_project_id:
        options.quota_project_id = config.quota_project_id
    return client_cls(credentials=credentials, client_options=options)


async def make_clients(config: DialogflowConfig) -> Clients:
    """All four clients, created in the running loop. Credentials are resolved once."""
    loop = asyncio.get_running_loop()
    credentials = None
    if not config.emulator:
        credentials = load_credentials(config)
        if credentials is None:
            # ADC may consult the metadata server: keep the loop free meanwhile.
            credentials = await asyncio.to_thread(_default_credentials, config)
    made = {s: make_client(s, config, credentials) for s in SERVICES}
    return Clients(loop=loop, **made)
