"""`tau dialogflow emulate | provision | check`: rehearse, set up and probe CX agents."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn

import typer

app = typer.Typer(
    help="Dialogflow CX: emulator, provisioning, checks.",
    no_args_is_help=True,
    add_completion=False,
)


def fail(message: str, code: int = 2) -> NoReturn:
    """One line on stderr and a non-zero exit. SystemExit rather than typer.Exit: `tau`
    runs the app with standalone_mode=False, where click turns typer.Exit into a return
    value that the exit status then loses. Control characters (an error text from the
    service may carry ESC sequences) are escaped, and the line stays one line."""
    from tau_adapters.jsonsafe import printable

    line = printable(message).replace("\n", "\\n")
    print(f"error: {line}", file=sys.stderr)
    raise SystemExit(code)


# What a terminal would obey and JSON leaves as it is (C1 controls, DEL, bidi overrides).
_UNSAFE_IN_JSON = re.compile(r"[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def json_text(value: Any) -> str:
    """`value` as indented JSON safe to print: still valid JSON, every control character
    escaped (`\\u009b`, `\\u202e`), non-ASCII text kept readable."""
    from tau_adapters.jsonsafe import printable

    text = json.dumps(value, indent=2, ensure_ascii=False)
    return printable(_UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text))


_AGENT = "Agent"
_CONN = "Connection"


def _connection_options(
    agent_id: str | None,
    project_id: str | None,
    location: str | None,
    gcp_sa_file: Path | None,
    api_endpoint: str | None,
    emulator: str | None,
) -> dict[str, Any]:
    return {
        "agent_id": agent_id,
        "project_id": project_id,
        "location": location,
        "gcp_sa_file": str(gcp_sa_file) if gcp_sa_file else None,
        "api_endpoint": api_endpoint,
        "emulator": emulator,
    }


@app.command()
def emulate(
    port: int = typer.Option(8787, "--port", help="Port to listen on (0: any free port)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind."),
    brain: str = typer.Option(
        "oracle", "--brain", help="Agent strategy answering for the agent: oracle, tool-calling..."
    ),
    model: str | None = typer.Option(None, "--model", help="Model of an LLM brain."),
    model_provider: str | None = typer.Option(None, "--model-provider", help="Its provider."),
    api_base: str | None = typer.Option(None, "--api-base", help="Its API base URL."),
    temperature: float = typer.Option(0.0, "--temperature", help="Its temperature."),
    brain_option: list[str] = typer.Option(
        [], "--brain-option", help="Extra brain option KEY=VALUE (repeatable)."
    ),
    env: str = typer.Option(
        "retail",
        "--env",
        help="Default domain: airline, retail or a τ³ one (tau3/airline, tau3/retail, "
        "tau3/telecom, ...).",
    ),
    preload_tools: bool = typer.Option(
        True, "--preload-tools/--no-preload-tools", help="Give new agents the domain's tools."
    ),
    fail_spec: list[str] = typer.Option(
        [], "--fail", help="Inject faults: CODE[:COUNT]\\[@RETRY_DELAY], e.g. unavailable:2."
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="τ-bench data directory."),
) -> None:
    """Serve the Dialogflow CX API on HOST:PORT, answered by a local agent (the brain)."""
    from adapters.dialogflow.harness.emulator import Emulator, FaultSpecError
    from tau_adapters.protocol import AdapterError
    from tau_adapters.registry import UnknownAdapterError
    from tau_bench.cli.key_values import key_values

    options: dict[str, Any] = {
        "model": model,
        "model_provider": model_provider,
        "api_base": api_base,
        "temperature": temperature,
        "env": env,
    }
    options.update(key_values(brain_option, "--brain-option"))
    if not 0 <= port <= 65535:
        fail(f"--port must be 0-65535 (0: any free port), got {port}")
    try:
        emulator = Emulator(
            brain=brain,
            brain_options=options,
            env=env,
            data_dir=data_dir,
            preload_tools=preload_tools,
        )
        for spec in fail_spec:
            emulator.faults.load(spec)
    except (UnknownAdapterError, AdapterError, FaultSpecError) as exc:
        fail(str(exc))

    async def serve() -> None:
        try:
            address = await emulator.start(host, port)
        except (OSError, RuntimeError) as exc:
            fail(f"cannot listen on {host}:{port}: {exc}")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop.set)
            except (NotImplementedError, RuntimeError):  # not on this platform/thread
                pass
        print(
            f"Dialogflow CX emulator on {address} (brain: {brain}, env: {env})\n"
            f"  export DIALOGFLOW_CX_EMULATOR_HOST={address}   # or pass --emulator {address}",
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
    agent_id: str | None = typer.Option(None, "--agent-id", rich_help_panel=_AGENT),
    project_id: str | None = typer.Option(None, "--project-id", rich_help_panel=_AGENT),
    location: str | None = typer.Option(None, "--location", rich_help_panel=_AGENT),
    playbook_name: str | None = typer.Option(
        None,
        "--playbook-name",
        help="Create/update this playbook instead of the agent's start playbook.",
        rich_help_panel=_AGENT,
    ),
    wire: str | None = typer.Option(
        None,
        "--wire",
        help="How sessions reach --playbook-name: 'reference' (default: the start playbook "
        "hands over to it) or 'start' (it becomes the agent's start playbook).",
        rich_help_panel=_AGENT,
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the requests, change nothing."),
    gcp_sa_file: Path | None = typer.Option(
        None,
        "--gcp-sa-file",
        help="Service-account key file (else ADC).",
        rich_help_panel=_CONN,
    ),
    api_endpoint: str | None = typer.Option(None, "--api-endpoint", rich_help_panel=_CONN),
    emulator: str | None = typer.Option(
        None, "--emulator", help="host:port of an emulator.", rich_help_panel=_CONN
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="τ-bench data directory."),
) -> None:
    """Create or update one function tool per domain tool and a playbook (idempotent)."""
    from adapters.dialogflow.clients import SeenTokens, make_clients
    from adapters.dialogflow.config import load_config
    from adapters.dialogflow.provision import DEFAULT_WIRING, WIRINGS, Provisioner
    from tau_adapters.jsonsafe import printable
    from tau_adapters.protocol import AdapterError
    from tau_adapters.redaction import mask_encoded, mask_values
    from tau_bench.suites import load_domain

    if wire is not None and wire not in WIRINGS:
        fail(f"--wire must be one of {', '.join(WIRINGS)}, not {wire!r}")
    if wire is not None and not playbook_name:
        fail("--wire needs --playbook-name (the start playbook is provisioned in place)")
    domain = load_domain(env, data_dir)
    try:
        config = load_config(
            _connection_options(agent_id, project_id, location, gcp_sa_file, api_endpoint, emulator)
        )
    except AdapterError as exc:
        fail(str(exc))

    tokens = SeenTokens()

    async def run() -> Any:
        clients = await make_clients(config, tokens)
        try:
            provisioner = Provisioner(clients, config, log=lambda m: print(m, file=sys.stderr))
            return await provisioner.run(
                env,
                domain.tool_schemas,
                domain.policy,
                playbook_name=playbook_name,
                wire=wire or DEFAULT_WIRING,
                dry_run=dry_run,
            )
        finally:
            await clients.close()

    try:
        report = asyncio.run(run())
    except (AdapterError, ValueError) as exc:
        fail(mask_encoded(str(exc), list(tokens)))
    if dry_run:
        print(json_text(mask_values(report.to_dict(), list(tokens))))
    verb = "would change" if dry_run else "changed"
    print(printable(f"{config.agent_name}: {report.wiring}"), file=sys.stderr)
    print(
        f"{config.agent_name}: {verb} {len(report.steps)}, unchanged {len(report.unchanged)}",
        file=sys.stderr,
    )


@app.command()
def check(
    agent_id: str | None = typer.Option(None, "--agent-id", rich_help_panel=_AGENT),
    project_id: str | None = typer.Option(None, "--project-id", rich_help_panel=_AGENT),
    location: str | None = typer.Option(None, "--location", rich_help_panel=_AGENT),
    environment: str | None = typer.Option(None, "--environment", rich_help_panel=_AGENT),
    say: str | None = typer.Option(None, "--say", help="Send this text and print the answer."),
    gcp_sa_file: Path | None = typer.Option(
        None,
        "--gcp-sa-file",
        help="Service-account key file (else ADC).",
        rich_help_panel=_CONN,
    ),
    api_endpoint: str | None = typer.Option(None, "--api-endpoint", rich_help_panel=_CONN),
    emulator: str | None = typer.Option(None, "--emulator", rich_help_panel=_CONN),
    session_param: list[str] = typer.Option([], "--session-param", help="KEY=VALUE (repeatable)."),
) -> None:
    """Reach the agent: list its function tools and optionally say something to it."""
    from adapters.dialogflow.adapter import DialogflowProvider
    from adapters.dialogflow.config import load_config
    from tau_adapters.protocol import AdapterError, SessionContext, UserTurn
    from tau_adapters.redaction import mask_encoded, mask_values

    options = _connection_options(
        agent_id, project_id, location, gcp_sa_file, api_endpoint, emulator
    )
    options.update(environment=environment, session_params=session_param, task_params=False)
    try:
        provider = DialogflowProvider(load_config(options))
    except AdapterError as exc:
        fail(str(exc))

    async def run() -> dict[str, Any]:
        try:
            names = await provider.tool_names()
            out: dict[str, Any] = {"agent": provider.config.agent_name, "function_tools": names}
            if say:
                import uuid

                adapter = provider.new_adapter()
                await adapter.start(
                    SessionContext(session_id=str(uuid.uuid4()), domain="", tools=[])
                )
                turn = await adapter.send(UserTurn(say))
                await adapter.close()
                out["session"] = adapter.session_path
                out["reply"] = {
                    "messages": turn.messages,
                    "tool_calls": [
                        {"name": c.name, "arguments": c.arguments} for c in turn.tool_calls
                    ],
                    "end_conversation": turn.end_conversation,
                    "handoff": turn.handoff,
                    "latency": turn.extra.get("latencies"),
                }
            if provider.warnings:
                out["warnings"] = provider.warnings
            return out
        finally:
            await provider.aclose()

    try:
        result = asyncio.run(run())
    except AdapterError as exc:
        fail(mask_encoded(str(exc), provider.secrets))
    # The agent may echo what it was sent (the bearer token, a secret parameter).
    print(json_text(mask_values(result, provider.secrets)))
