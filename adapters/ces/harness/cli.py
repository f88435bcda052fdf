"""`tau ces emulate | provision | check`: rehearse locally, set up an app, probe it."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

import typer

from tau_bench.cli.errors import UserError

app = typer.Typer(
    help="CX Agent Studio (CES) apps: provision one for a domain, check it answers, emulate it.",
    no_args_is_help=True,
    add_completion=False,
)

_APP = "App"
_CONN = "Connection"

AppOpt = typer.Option(
    ..., "--app-id", "--app", help="App id or projects/P/locations/L/apps/A.", rich_help_panel=_APP
)
ProjectOpt = typer.Option(None, "--project-id", rich_help_panel=_APP)
LocationOpt = typer.Option(None, "--location", help="us, eu, global...", rich_help_panel=_APP)
CredsOpt = typer.Option(
    None,
    "--gcp-sa-file",
    help="Any google.auth credentials file (else ADC).",
    rich_help_panel=_CONN,
)
EndpointOpt = typer.Option(None, "--api-endpoint", rich_help_panel=_CONN)
EmulatorOpt = typer.Option(
    None,
    "--emulator",
    help="host:port of an emulator (or $CES_EMULATOR_HOST).",
    rich_help_panel=_CONN,
)


def _shown(value: Any) -> Any:
    """A JSON-like value whose strings (keys too) are safe for a terminal: control
    characters from the service (ESC, C1, bidi overrides) become visible escapes."""
    from tau_adapters.jsonsafe import printable

    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {_shown(k) if isinstance(k, str) else k: _shown(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_shown(v) for v in value]
    return value


def _print_json(value: Any) -> None:
    print(json.dumps(_shown(value), indent=2, ensure_ascii=False))


def _options(**values: Any) -> Any:
    from adapters.ces.adapter import load_options
    from tau_adapters.protocol import AdapterError

    clean = {k: (str(v) if isinstance(v, Path) else v) for k, v in values.items() if v is not None}
    try:
        return load_options(clean)
    except AdapterError as exc:
        raise UserError(str(exc)) from None


@app.command()
def emulate(
    port: int = typer.Option(8788, "--port", help="Port to listen on (0: any free port)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind."),
    brain: str = typer.Option("oracle", "--brain", help="Agent strategy answering: oracle..."),
    brain_option: list[str] = typer.Option(
        [], "--brain-option", help="Brain option KEY=VALUE (repeatable), e.g. model=gpt-4o."
    ),
    env: str = typer.Option(
        "retail",
        "--env",
        help="Default domain: airline, retail or a τ³ one (tau3/airline, tau3/retail, "
        "tau3/telecom, ...).",
    ),
    auto_apps: bool = typer.Option(
        True, "--auto-apps/--empty", help="Apps exist on first use with the domain's tools."
    ),
    fail_spec: list[str] = typer.Option(
        [], "--fail", help="Inject faults CODE[:COUNT]\\[@RETRY_DELAY], e.g. unavailable:2."
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="τ-bench data directory."),
) -> None:
    """Serve the CES API on HOST:PORT, answered by a local agent (the brain)."""
    from adapters.ces.harness.emulator import Emulator, FaultSpecError
    from adapters.ces.options import check_port

    try:
        check_port(port, allow_zero=True)
    except ValueError as exc:
        raise UserError(f"--port: {exc}") from None
    from tau_adapters.protocol import AdapterError
    from tau_adapters.registry import UnknownAdapterError
    from tau_bench.cli.key_values import key_values

    options: dict[str, Any] = {"env": env, **key_values(brain_option, "--brain-option")}
    try:
        emulator = Emulator(
            brain=brain, brain_options=options, env=env, data_dir=data_dir, auto_apps=auto_apps
        )
        for spec in fail_spec:
            emulator.faults.load(spec)
    except (UnknownAdapterError, AdapterError, FaultSpecError) as exc:
        raise UserError(str(exc)) from None

    async def serve() -> None:
        try:
            address = await emulator.start(host, port)
        except (OSError, RuntimeError) as exc:
            raise UserError(f"cannot listen on {host}:{port}: {exc}") from None
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop.set)
            except (NotImplementedError, RuntimeError):
                pass
        print(
            f"CES emulator on {address} (brain: {brain}, env: {env})\n"
            f"  export CES_EMULATOR_HOST={address}   # or pass --emulator {address}",
            file=sys.stderr,
            flush=True,
        )
        try:
            await stop.wait()
        finally:
            await emulator.stop(grace=1.0)
        print("emulator stopped", file=sys.stderr)

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        print("emulator stopped", file=sys.stderr)


@app.command()
def provision(
    env: str = typer.Option(..., "--env", help="Domain whose tools and policy to install."),
    app_id: str = AppOpt,
    project_id: str | None = ProjectOpt,
    location: str | None = LocationOpt,
    agent_name: str | None = typer.Option(
        None,
        "--agent-name",
        help="Agent display name (default tau-bench-ENV).",
        rich_help_panel=_APP,
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the requests, change nothing."),
    credentials_file: Path | None = CredsOpt,
    api_endpoint: str | None = EndpointOpt,
    emulator: str | None = EmulatorOpt,
    data_dir: Path | None = typer.Option(None, "--data-dir", help="τ-bench data directory."),
) -> None:
    """Create or update one client-function tool per domain tool and an agent (idempotent)."""
    from adapters.ces.clients import TokenLog, make_clients
    from adapters.ces.harness.provision import Provisioner
    from tau_adapters.protocol import AdapterError
    from tau_adapters.redaction import mask_encoded
    from tau_bench.suites import load_domain

    domain = load_domain(env, data_dir)
    options = _options(
        app_id=app_id,
        project_id=project_id,
        location=location,
        credentials_file=credentials_file,
        api_endpoint=api_endpoint,
        emulator=emulator,
    )

    tokens = TokenLog()

    async def run() -> Any:
        clients = await make_clients(options, tokens)
        try:
            provisioner = Provisioner(clients, options, log=lambda m: print(m, file=sys.stderr))
            return await provisioner.run(
                env, domain.tool_schemas, domain.policy, agent_name=agent_name, dry_run=dry_run
            )
        finally:
            await clients.close()

    try:
        report = asyncio.run(run())
    except AdapterError as exc:
        raise UserError(mask_encoded(str(exc), tokens.tokens)) from None
    if dry_run:
        _print_json(report.to_dict())
    verb = "would change" if dry_run else "changed"
    print(
        f"{options.app_name}: {verb} {len(report.steps)}, unchanged {len(report.unchanged)}",
        file=sys.stderr,
    )


@app.command()
def check(
    app_id: str = AppOpt,
    project_id: str | None = ProjectOpt,
    location: str | None = LocationOpt,
    deployment: str | None = typer.Option(None, "--deployment", rich_help_panel=_APP),
    say: str | None = typer.Option(None, "--say", help="Send this text and print the answer."),
    credentials_file: Path | None = CredsOpt,
    api_endpoint: str | None = EndpointOpt,
    emulator: str | None = EmulatorOpt,
) -> None:
    """Reach the app (preflight), list its client-function tools, optionally say something."""
    from adapters.ces.adapter import CesProvider
    from tau_adapters.protocol import AdapterError, SessionContext, UserTurn

    provider = CesProvider(
        _options(
            app_id=app_id,
            project_id=project_id,
            location=location,
            deployment=deployment,
            credentials_file=credentials_file,
            api_endpoint=api_endpoint,
            emulator=emulator,
            task_variables=False,
        )
    )

    async def run() -> dict[str, Any]:
        import uuid

        try:
            await provider.preflight()
            out: dict[str, Any] = {
                "app": provider.options.app_name,
                "client_functions": await provider.tool_names(),
            }
            if say:
                adapter = provider.new_adapter()
                await adapter.start(
                    SessionContext(session_id=str(uuid.uuid4()), domain="", tools=[])
                )
                turn = await adapter.send(UserTurn(say))
                await adapter.close()
                out["session"] = adapter.session_name
                out["reply"] = {
                    "messages": turn.messages,
                    "tool_calls": [
                        {"name": c.name, "arguments": c.arguments} for c in turn.tool_calls
                    ],
                    "end_conversation": turn.end_conversation,
                    "handoff": turn.handoff,
                }
            if provider.warnings:
                out["warnings"] = provider.warnings
            return out
        finally:
            await provider.aclose()

    try:
        result = asyncio.run(run())
    except AdapterError as exc:
        raise UserError(str(provider.masked_error(exc))) from None
    _print_json(provider.mask(result))
