"""`tau http init | check | presets`: starter configs for the HTTP chatbot adapter."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import NoReturn

import typer

from tau_bench.cli.errors import UserError

app = typer.Typer(
    help="HTTP chatbot adapter: starter configs, checks, the reference bot.",
    no_args_is_help=True,
    add_completion=False,
)


def _fail(message: str) -> NoReturn:
    """One line on stderr and exit code 2 (through the CLI's UserError handling)."""
    raise UserError(message)


@app.command()
def init(
    preset: str = typer.Option(..., "--preset", help="openai-chat, rasa-rest or generic-json."),
    output: Path | None = typer.Option(
        None, "-o", "--output", help="Write here (default: print to stdout)."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Write a starter bot config from a preset; edit it, then `tau run --agent-strategy http`."""
    from adapters.http.presets import UnknownPresetError, preset_text

    try:
        text = preset_text(preset)
    except UnknownPresetError as exc:
        _fail(str(exc))
    header = (
        f"# HTTP bot config, from the {preset!r} preset (docs/http-adapter.md).\n"
        "# ${NAME} reads an environment variable (${NAME:-default} with a default).\n"
    )
    if output is None:
        sys.stdout.write(header + text)
        return
    if output.exists() and not force:
        _fail(f"{output} exists; pass --force to overwrite it")
    try:
        output.write_text(header + text, encoding="utf-8")
    except OSError as exc:
        _fail(f"cannot write {output}: {exc.strerror}")
    print(
        f"wrote {output} (preset {preset}); check it with: tau http check {output}", file=sys.stderr
    )


@app.command()
def check(
    config: Path = typer.Argument(..., help="The bot config (YAML or JSON)."),
    probe: bool = typer.Option(
        False, "--probe", help="Also send the bot one message and show the parsed turn."
    ),
    message: str = typer.Option(
        "Hello, I need help with my order.", "--message", help="What --probe says."
    ),
    env: str = typer.Option("retail", "--env", help="Domain whose tools --probe declares."),
    task_id: str | None = typer.Option(
        None,
        "--task-id",
        help="Task the probe's session names ({{ task_id }}: an index into the domain's "
        "default split, e.g. 0; default null, no task). A bot that plays the task, like "
        "serve-bot's oracle, needs it.",
    ),
) -> None:
    """Validate a bot config (with the current environment) and summarise it; `--probe`
    sends one real message and shows how the reply was read."""
    from adapters.http.config import ConfigError
    from adapters.http.config_load import load_config

    try:
        loaded = load_config(config)
    except ConfigError as exc:
        _fail(str(exc))
    cfg = loaded.config
    send = cfg.message
    results = cfg.tool_results_request()
    print(f"{config}: ok")
    print(f"  session mode : {cfg.session.mode}")
    print(f"  messages     : {send.method} {send.path or '/'} ({send.stream})")
    print(f"  tool results : {cfg.tool_results.mode}, {results.method} {results.path or '/'}")
    print(f"  server tools : {'on' if cfg.server_tools.enabled else 'off'}")
    if probe:
        from adapters.http.harness.probe import probe_bot
        from tau_adapters.protocol import AdapterError

        try:
            lines = asyncio.run(probe_bot(loaded, message, env, task_id=task_id))
        except AdapterError as exc:
            _fail(f"probe failed ({exc.kind}): {exc}")
        print("\n".join(lines))


@app.command()
def presets() -> None:
    """List the shipped presets."""
    from adapters.http.presets import PRESETS

    for name, text in PRESETS.items():
        first = text.splitlines()[0].lstrip("# ").strip()
        print(f"{name:14} {first}")


# What the hint sets BOT_TOKEN to when the bot takes no token: the generic-json preset
# sends `Bearer ${BOT_TOKEN}`, and a config does not load with the variable unset. It is
# masked in records like any value read from the environment, so it is a word no bot says.
NO_TOKEN = "tau-no-token"


def serve_bot_hint(url: str, *, token: bool) -> list[str]:
    """Shell lines that point a config at the reference bot on `url`, check it and run it,
    working when pasted as they are (with `token`, once BOT_TOKEN holds the bot's token:
    the hint never shows it)."""
    if token:
        export = f"export BOT_URL={url}   # and BOT_TOKEN=<the bot's --token> (not shown)"
    else:
        export = f"export BOT_URL={url} BOT_TOKEN={NO_TOKEN}   # this bot takes no token"
    return [
        export,
        "tau http init --preset generic-json -o bot.yaml",
        "tau http check bot.yaml --probe --task-id 0",
        "tau run --agent-strategy http --http-config bot.yaml --env retail "
        "--user-strategy scripted --task-ids 0 1 2",
    ]


@app.command("serve-bot")
def serve_bot(
    port: int = typer.Option(8765, "--port", min=0, max=65535, help="Port (0: any free port)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on."),
    brain: str = typer.Option(
        "oracle", "--brain", help="Agent strategy answering (oracle, tool-calling, ...)."
    ),
    model: str | None = typer.Option(None, "--model", help="Model of an LLM brain."),
    brain_option: list[str] = typer.Option(
        [],
        "--brain-option",
        help="LLM brain option KEY=VALUE (repeatable), e.g. api_base=http://127.0.0.1:8000/v1, "
        "temperature=0.2, provider=openai.",
    ),
    token: str | None = typer.Option(
        None, "--token", envvar="BOT_TOKEN", help="Require this bearer token (env BOT_TOKEN)."
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="τ-bench data directory."),
) -> None:
    """Run the reference bot (the generic-json preset's API) backed by a local agent."""
    import asyncio

    import uvicorn

    from tau_adapters.extras import require
    from tau_adapters.protocol import AdapterError
    from tau_adapters.registry import UnknownAdapterError
    from tau_bench.cli.key_values import key_values
    from tau_bench.listen import http_url, listening_socket

    require("http")
    from adapters.http.harness.reference_bot import create_bot_app

    options: dict[str, str] = {"model": model} if model else {}
    options.update(key_values(brain_option, "--brain-option"))
    try:
        bot = create_bot_app(brain=brain, brain_options=options, data_dir=data_dir, token=token)
    except (UnknownAdapterError, AdapterError) as exc:
        raise UserError(f"--brain {brain}: {exc}") from None
    try:  # bound before it is announced: a port in use is one line, port 0 a real one
        sock = listening_socket(host, port)
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    url = http_url(host, sock)
    print(f"reference bot ({brain}) on {url}; try:", file=sys.stderr)
    for line in serve_bot_hint(url, token=bool(token)):
        print(f"  {line}", file=sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(bot, log_level="warning"))
    try:
        asyncio.run(server.serve(sockets=[sock]))
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
