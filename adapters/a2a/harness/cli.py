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


def _brain_factory(brain: str, options: dict[str, Any]) -> Any:
    """What answers each conversation: the oracle, or the agent strategy `brain` built
    once with `options` (checked now: a bad value is one line before the agent listens)."""
    if brain == "oracle":
        from tau_bench.agents.oracle import OracleAgent

        return OracleAgent
    from tau_adapters.registry import UnknownAdapterError, build_provider

    try:
        provider = build_provider(brain, {"temperature": 0.0, **options})
    except UnknownAdapterError as exc:
        raise UserError(str(exc)) from None
    return provider.new_adapter


def _serve_hint(url: str, env: str | None, auth: str) -> list[str]:
    """Commands that talk to the reference agent on `url`, working as pasted: the oracle
    brain plays the task the first message's metadata names, so both name one."""
    domain = env or "retail"
    # τ³ scores NL assertions with a model judge: assumed met, the run stays offline.
    judge = " --judge-model assume-met" if domain.startswith("tau3/") else ""
    lines = [
        f"tau a2a check --url {url} --probe --task-id 0 --env {domain}",
        f"tau run --agent-strategy a2a --a2a-url {url} --a2a-metadata 'env={{env}}' "
        "--a2a-metadata 'task_id={task_id}' --a2a-metadata 'task_split={task_split}' "
        f"--env {domain} --user-strategy scripted --task-ids 0 1 2{judge}",
    ]
    if auth == "bearer":
        lines.append("# with the --secret as --bearer-token (tau run: --a2a-token)")
    elif auth != "none":
        lines.append("# with the --secret as --api-key (tau run: --a2a-api-key)")
    return lines


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
    brain_option: list[str] = typer.Option(
        [],
        "--brain-option",
        help="LLM brain option KEY=VALUE (repeatable), e.g. api_base=http://127.0.0.1:8000/v1, "
        "temperature=0.2, provider=openai.",
    ),
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
    from tau_bench.cli.key_values import key_values

    options: dict[str, Any] = {"model": model} if model else {}
    options.update(key_values(brain_option, "--brain-option"))
    factory = _brain_factory(brain, options)
    executor = ReferenceExecutor(factory, env=env, data_dir=data_dir, needs_task=brain == "oracle")

    def build(url: str) -> Any:
        card = agent_card(
            public_url or url, streaming=streaming, auth=modes[auth], client_tools=client_tools
        )
        return a2a_app(executor, card, auth=modes[auth], secret=secret)

    def ready(url: str) -> None:
        print(f"A2A agent listening on {url}", flush=True)  # stdout: this one line
        hint = "\n".join(f"  {line}" for line in _serve_hint(url, env, auth))
        print(f"try:\n{hint}", file=sys.stderr, flush=True)

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


# Stands in for a credential the options lack while the card is read: the adapter checks
# the card's security requirements when it reads the card, but the card itself is public
# (fetched without credentials), and no message is ever sent with a stand-in.
_STAND_IN = "tau-a2a-check-reads-the-card-only"


async def _read_card(provider: Any) -> tuple[Any, Any, str | None]:
    """(card, the provider that read it, None) when `provider` can talk to the agent;
    (card, a reader, why not) when the card is public but requires credentials the
    options lack. Any other failure is `provider`'s own error."""
    from adapters.a2a.adapter import A2AProvider
    from adapters.a2a.client import check_auth
    from tau_adapters.protocol import AdapterConfigError, AdapterError

    try:
        return await provider.connection.card(), provider, None
    except AdapterConfigError as exc:
        first = exc
    real = provider.options
    stand_ins = {k: _STAND_IN for k in ("bearer_token", "api_key") if getattr(real, k) is None}
    reader = A2AProvider(real.model_copy(update=stand_ins))
    try:
        card = await reader.connection.card()
    except AdapterError:
        await reader.aclose()
        raise first from None
    try:
        check_auth(card, real)
    except AdapterConfigError as exc:
        return card, reader, str(exc).removeprefix("a2a: ")
    await reader.aclose()  # not a matter of credentials after all
    raise first


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
        card, reader, missing = await _read_card(provider)
        try:
            for line in _card_lines(card):
                show(line)
            show(f"tool mode: {await reader.tool_mode()}")
        finally:
            if reader is not provider:
                await reader.aclose()
        if missing and probe:
            raise UserError(f"a2a: {provider.redactor.text(missing)}")
        if missing:  # the card is public; messages (--probe, a run) need the credentials
            show(f"credentials: missing; {missing}")
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
