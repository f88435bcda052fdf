"""`tau a2a serve-agent` (the reference agent) and `tau a2a check` (card + one probe)."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import typer

from tau_adapters.jsonsafe import printable
from tau_bench.cli.errors import UserError

app = typer.Typer(help="A2A agents: serve the reference agent, check an agent's card.")


def _brain_factory(brain: str, model: str | None) -> Any:
    if brain == "oracle":
        from tau_bench.agents.oracle import OracleAgent

        return OracleAgent
    from tau_adapters.registry import UnknownAdapterError, build_provider

    try:
        provider = build_provider(brain, {"model": model, "temperature": 0.0})
    except UnknownAdapterError as exc:
        raise UserError(str(exc)) from None
    return provider.new_adapter


@app.command("serve-agent")
def serve_agent(
    env: str = typer.Option(None, help="Domain served (default: the one each conversation names)."),
    host: str = typer.Option("127.0.0.1", help="Interface to listen on."),
    port: int = typer.Option(
        0, min=0, max=65535, help="Port (0: any free port; the real URL is printed)."
    ),
    brain: str = typer.Option(
        "oracle", help="oracle (replays the task's ground truth) or an agent strategy name."
    ),
    model: str = typer.Option(None, help="Model of an LLM brain (e.g. openai/gpt-4o)."),
    data_dir: str = typer.Option(None, help="τ-bench data directory."),
    auth: str = typer.Option("none", help="none, bearer or api-key: what the card requires."),
    secret: str = typer.Option(
        None, envvar="TAU_A2A_AGENT_SECRET", help="The token / key callers must present."
    ),
    streaming: bool = typer.Option(True, help="Declare and serve message/stream."),
    client_tools: bool = typer.Option(True, help="Declare the client-tools extension."),
    public_url: str = typer.Option(
        None, help="URL the card advertises (default: the URL it listens on)."
    ),
) -> None:
    """Serve the reference A2A agent until interrupted."""
    from adapters.a2a.harness.reference_agent import ReferenceExecutor
    from adapters.a2a.harness.server import Auth, a2a_app, agent_card, serve_forever

    modes: dict[str, Auth] = {
        "none": None,
        "bearer": "bearer",
        "api-key": "api_key",
        "api_key": "api_key",
    }
    if auth not in modes:
        raise UserError(f"--auth must be none, bearer or api-key, not {auth!r}")
    if modes[auth] and not secret:
        raise UserError(f"--auth {auth} needs --secret (or TAU_A2A_AGENT_SECRET)")
    if public_url is not None:
        from tau_bench.user_values import check_endpoint_url

        try:
            check_endpoint_url(public_url)
        except ValueError as exc:
            raise UserError(f"--public-url: {exc}") from None
    if env is not None:
        from tau_bench.suites import load_domain

        load_domain(env, data_dir)  # fail now, with one line, on a bad env or data dir
    factory = _brain_factory(brain, model)
    executor = ReferenceExecutor(factory, env=env, data_dir=data_dir, needs_task=brain == "oracle")

    def build(url: str) -> Any:
        card = agent_card(
            public_url or url, streaming=streaming, auth=modes[auth], client_tools=client_tools
        )
        return a2a_app(executor, card, auth=modes[auth], secret=secret)

    def ready(url: str) -> None:
        print(f"A2A agent listening on {url}", flush=True)

    try:
        serve_forever(build, host, port, ready)
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    except KeyboardInterrupt:
        pass


def _card_lines(card: Any) -> list[str]:
    from adapters.a2a.convention import EXTENSION_URI

    lines = [f"name: {card.name}", f"version: {card.version}"]
    for iface in card.supported_interfaces:
        version = iface.protocol_version or "?"
        lines.append(f"interface: {iface.protocol_binding} {iface.url} (protocol {version})")
    lines.append(f"streaming: {'yes' if card.capabilities.streaming else 'no'}")
    uris = [e.uri for e in card.capabilities.extensions]
    lines.append(f"extensions: {', '.join(uris) or 'none'}")
    lines.append(f"client-tools extension: {'yes' if EXTENSION_URI in uris else 'no'}")
    schemes = [f"{n} ({s.WhichOneof('scheme')})" for n, s in card.security_schemes.items()]
    lines.append(f"security: {', '.join(schemes) or 'none'}")
    return lines


async def _check(
    options: dict[str, Any], probe: bool, env: str, task_id: str | None, text: str
) -> None:
    from adapters.a2a.adapter import A2AProvider, parse_options
    from tau_adapters.protocol import AdapterError, SessionContext, UserTurn

    provider = A2AProvider(parse_options(options))

    def show(line: str, *, newlines: bool = False) -> None:
        """Text from the agent: its secrets masked, nothing the terminal would obey (and,
        but in messages, no newline that would pass for another line of the report)."""
        text = printable(provider.redactor.text(line))
        print(text if newlines else text.replace("\n", "\\n"))

    try:
        card = await provider.connection.card()
        for line in _card_lines(card):
            show(line)
        mode = await provider.tool_mode()
        show(f"tool mode: {mode}")
        if not probe:
            return
        from tau_bench.suites import load_domain

        domain = load_domain(env)
        session = SessionContext(
            session_id="tau-a2a-check",
            domain=env,
            tools=domain.tool_schemas,
            policy=domain.policy,
            task_id=task_id,
        )
        adapter = provider.new_adapter()
        await adapter.start(session)
        turn = await adapter.send(UserTurn(text))
        await adapter.close()
        show(f"task state: {turn.extra.get('task_state')}")
        for message in turn.messages:
            show(f"message: {message}", newlines=True)
        for call in turn.tool_calls:
            show(f"tool call: {call.name} {json.dumps(call.arguments)} (id {call.id})")
        show(f"ends conversation: {'yes' if turn.end_conversation else 'no'}")
    except AdapterError as exc:
        raise UserError(provider.redactor.text(str(exc))) from None
    finally:
        await provider.aclose()


@app.command("check")
def check(
    url: str = typer.Option(..., help="Base URL of the A2A agent."),
    probe: bool = typer.Option(False, help="Also send one message and show the parsed turn."),
    bearer_token: str = typer.Option(None, envvar="A2A_BEARER_TOKEN", help="Bearer token."),
    api_key: str = typer.Option(None, envvar="A2A_API_KEY", help="API key (header scheme)."),
    tool_mode: str = typer.Option("auto", help="auto, extension, text or none."),
    env: str = typer.Option("retail", help="Domain whose tools the probe offers."),
    task_id: str = typer.Option(None, help="Task id sent as message metadata by the probe."),
    message: str = typer.Option("Hello, I need some help with my order.", help="Probe text."),
    metadata: list[str] = typer.Option(
        None, help="KEY=TEMPLATE first-message metadata (default: env, task_id, task_split)."
    ),
    timeout: float = typer.Option(30.0, help="Deadline of each call, in seconds."),
) -> None:
    """Fetch the agent card; with --probe, send one message and print the parsed turn."""
    options: dict[str, Any] = {
        "agent_url": url,
        "bearer_token": bearer_token,
        "api_key": api_key,
        "tool_mode": tool_mode,
        "timeout": timeout,
        "max_attempts": 1,
        "message_metadata": metadata
        or (["env={env}", "task_id={task_id}", "task_split={task_split}"] if task_id else []),
    }
    asyncio.run(_check(options, probe, env, task_id, message))
    sys.stdout.flush()
