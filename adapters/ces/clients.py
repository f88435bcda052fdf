"""Make the asyncio CES clients: the real service (TLS + Google credentials) or an
emulator (plain-text channel, no credentials).

Credentials are google.auth's business: a file goes to `google.auth.load_credentials_from_file`
(service-account keys, authorized-user files, external-account / workload-identity
configs, impersonation), no file means Application Default Credentials. We never read
key material ourselves, and errors name only the file and the exception type.

aio channels belong to the event loop running when they are made: call `make_clients`
inside that loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from adapters.ces.options import Options
from tau_adapters.protocol import AdapterAuthError, AdapterConfigError

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)


def load_credentials(options: Options) -> Any:
    """Credentials from `credentials_file` (any type google.auth knows), else None.
    May use the network (external accounts): call it off the event loop."""
    if not options.credentials_file:
        return None
    import google.auth
    import google.auth.credentials
    from google.auth import exceptions as auth_exceptions

    try:
        # Scopes are added afterwards: with scopes, google.auth looks the project of an
        # external account up over the network while loading; without, it does not.
        credentials, _ = google.auth.load_credentials_from_file(
            options.credentials_file, quota_project_id=options.quota_project_id
        )
        credentials = google.auth.credentials.with_scopes_if_required(credentials, list(SCOPES))
    except (auth_exceptions.TransportError, auth_exceptions.RefreshError) as exc:
        # External-account files are exchanged for a token while loading (STS).
        raise AdapterAuthError(
            f"ces: could not obtain a token with {options.credentials_file} ({type(exc).__name__})"
        ) from None
    except (auth_exceptions.GoogleAuthError, ValueError, KeyError, OSError) as exc:
        # google.auth's messages may quote the file; keep only the type.
        raise AdapterConfigError(
            f"ces: {options.credentials_file} is not a usable Google credentials file "
            f"({type(exc).__name__})"
        ) from None
    return credentials


def default_credentials(options: Options) -> Any:
    """Application Default Credentials (may consult the metadata server: run in a thread)."""
    import google.auth
    from google.auth import exceptions as auth_exceptions

    try:
        credentials, _ = google.auth.default(
            scopes=list(SCOPES), quota_project_id=options.quota_project_id
        )
    except auth_exceptions.DefaultCredentialsError:
        raise AdapterAuthError(
            "ces: no Google credentials found: run `gcloud auth application-default login`, "
            "set GOOGLE_APPLICATION_CREDENTIALS, or pass --gcp-sa-file "
            "(or --emulator for a local rehearsal)"
        ) from None
    return credentials


@dataclass
class Clients:
    """The session and agent (apps, agents, tools) clients, sharing one channel setup."""

    sessions: Any
    agents: Any
    loop: asyncio.AbstractEventLoop

    async def close(self) -> None:
        for client in (self.sessions, self.agents):
            try:
                await client.transport.close()
            except Exception:
                pass


def _client(kind: str, options: Options, credentials: Any) -> Any:
    from google.cloud import ces_v1

    if kind == "sessions":
        from google.cloud.ces_v1.services.session_service.transports import (
            SessionServiceGrpcAsyncIOTransport,
        )

        client_cls: Any = ces_v1.SessionServiceAsyncClient
        transport_cls: Any = SessionServiceGrpcAsyncIOTransport
    else:
        from google.cloud.ces_v1.services.agent_service.transports import (
            AgentServiceGrpcAsyncIOTransport,
        )

        client_cls = ces_v1.AgentServiceAsyncClient
        transport_cls = AgentServiceGrpcAsyncIOTransport
    if options.emulator:
        import grpc

        channel = grpc.aio.insecure_channel(options.emulator)
        return client_cls(transport=transport_cls(channel=channel))
    from google.api_core.client_options import ClientOptions

    client_options = ClientOptions(api_endpoint=options.endpoint)
    if options.quota_project_id:
        client_options.quota_project_id = options.quota_project_id
    return client_cls(credentials=credentials, client_options=client_options)


async def make_clients(options: Options) -> Clients:
    """Both clients, in the running loop; credentials resolved once."""
    loop = asyncio.get_running_loop()
    credentials = None
    if not options.emulator:
        credentials = await asyncio.to_thread(load_credentials, options)
        if credentials is None:
            credentials = await asyncio.to_thread(default_credentials, options)
    return Clients(
        sessions=_client("sessions", options, credentials),
        agents=_client("agents", options, credentials),
        loop=loop,
    )
