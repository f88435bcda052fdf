"""`tau tools serve | openapi`: serve a domain's tools to agents that call tools themselves."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import typer

from tau_bench.cli.errors import fail
from tau_bench.output_files import shown_path

app = typer.Typer(no_args_is_help=True, add_completion=False)


_ENV_HELP = (
    "The domain whose tools to serve: airline, retail, or a τ³ domain "
    "(tau3/airline, tau3/retail, tau3/telecom, ...)."
)


@app.command()
def serve(
    env: str = typer.Option(..., "--env", help=_ENV_HELP),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on."),
    port: int = typer.Option(8080, "--port", min=0, max=65535, help="Port (0 picks a free one)."),
    token: str | None = typer.Option(
        None, "--token", envvar="TAU_TOOLS_TOKEN", help="Bearer token clients must send."
    ),
    ttl: float = typer.Option(3600.0, "--ttl", help="Seconds an idle session is kept."),
    public_url: str | None = typer.Option(
        None, "--public-url", help="URL agents reach this server at (for the OpenAPI servers)."
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="τ-bench data directory."),
    mcp: bool = typer.Option(True, "--mcp/--no-mcp", help="Also serve MCP at /mcp."),
    max_connections: int = typer.Option(
        1000,
        "--max-connections",
        min=1,
        help="Open connections at most (then the longest idle one makes room).",
    ),
    request_timeout: float = typer.Option(
        30.0,
        "--request-timeout",
        help="Seconds a request (headers and body) may take to arrive.",
    ),
) -> None:
    """Serve the tools over HTTP (/sessions, /openapi.json) and MCP (/mcp)."""
    if not (token or "").strip():
        fail("pass --token TOKEN or set TAU_TOOLS_TOKEN (clients send it as a bearer token)")
    if not (math.isfinite(ttl) and ttl > 0):
        fail(f"--ttl must be a positive, finite number of seconds, got {ttl}")
    if not (math.isfinite(request_timeout) and request_timeout > 0):
        fail(
            f"--request-timeout must be a positive, finite number of seconds, got {request_timeout}"
        )
    from tau_adapters.extras import require

    require("http")

    from tau_bench.guarded_h11 import GuardedServer
    from tau_bench.suites import load_domain
    from tau_bench.toolserver import SessionStore, create_app
    from tau_bench.toolserver.app import clean_token
    from tau_bench.toolserver.background import ServerLimits, server_config

    try:
        token = clean_token(token)
    except ValueError as exc:
        fail(f"--token / TAU_TOOLS_TOKEN: {exc}")
    limits = ServerLimits(max_connections=max_connections, request_timeout=request_timeout)
    domain = load_domain(env, data_dir)
    store = SessionStore(domain, ttl=ttl)
    app_ = create_app(
        store, token, server_url=public_url, mcp=mcp, body_timeout=limits.body_timeout
    )
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))  # bound first: --port 0 prints the port really used
        sock.listen(2048)  # clients that connect now wait in the backlog until uvicorn serves
    except OSError as exc:
        sock.close()
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    print(
        f"serving {env} tools on http://{shown}:{bound}: POST /sessions, "
        f"/sessions/{{id}}/tools/{{name}}, /openapi.json{', /mcp' if mcp else ''} "
        "(bearer token required)",
        file=sys.stderr,
        flush=True,
    )
    GuardedServer(server_config(app_, limits=limits)).run(sockets=[sock])


@app.command()
def openapi(
    env: str = typer.Option(..., "--env", help=_ENV_HELP),
    output: Path | None = typer.Option(
        None, "-o", "--output", help="Write here (default: stdout)."
    ),
    server_url: str | None = typer.Option(
        None, "--server-url", help="The tool server's public URL, put in `servers`."
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="τ-bench data directory."),
) -> None:
    """Print the tool server's OpenAPI document (to import into an agent platform)."""
    from tau_bench.suites import load_domain
    from tau_bench.toolserver.openapi import build_openapi

    domain = load_domain(env, data_dir)
    doc = build_openapi(
        domain.tool_schemas,
        domain=domain.name,
        server_url=server_url,
        default_split=domain.default_split,
    )
    text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {shown_path(output)}: {exc.strerror}")
    print(f"wrote {output}", file=sys.stderr)
