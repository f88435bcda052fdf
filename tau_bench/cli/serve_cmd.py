"""`tau serve`: the evaluation HTTP API (FastAPI on uvicorn); see docs/service.md.

Thin: check the flags (a token is required unless `--no-auth` on a loopback address),
settle the `GET /scores` defaults, take the state directory's lock, and hand the app to
uvicorn. FastAPI and uvicorn are imported only when the server really starts.
"""

from __future__ import annotations

import contextlib
import socket
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from tau_bench.cli.errors import fail
from tau_bench.config.ray_address import check_ray_address
from tau_bench.runner.backends import check_local_ray
from tau_bench.service.settings import (
    DEFAULT_SCORES_SETTINGS,
    LOOPBACK_HOSTS,
    MAX_REPORT_RENDERS,
    MAX_RUNS_AT_ONCE,
    MAX_UNFINISHED_RUNS,
    STATE_DIR_ENV,
    TOKEN_ENV,
    ServiceSettings,
)

SCORES_PANEL = "GET /scores defaults (MT-bench compatibility)"
GRACEFUL_SHUTDOWN = 5  # seconds open requests (long polls) get before runs are stopped
MIN_TOKEN_LENGTH = 16
# uvicorn's log levels (`uvicorn.config.LOG_LEVELS`), listed here so that a bad one is a
# usage error before uvicorn is imported.
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


def _note(message: str) -> None:
    print(f"tau serve: {message}", file=sys.stderr, flush=True)


def scores_settings(
    config_file: Path | None,
    agent_strategy: str | None,
    user_strategy: str | None,
    user_model: str | None,
) -> dict[str, Any]:
    """The run settings `GET /scores` uses: defaults < YAML file < flags, validated."""
    from tau_bench.config import RunConfigError, load_yaml
    from tau_bench.service.submission import (
        SubmissionError,
        check_strategies,
        config_from_request,
    )

    settings: dict[str, Any] = dict(DEFAULT_SCORES_SETTINGS)
    if config_file is not None:
        try:
            settings.update(load_yaml(config_file))
        except RunConfigError as exc:
            fail(f"--scores-config: {exc}")
    flags = {
        "agent_strategy": agent_strategy,
        "user_strategy": user_strategy,
        "user_model": user_model,
    }
    settings.update({k: v for k, v in flags.items() if v is not None})
    for per_request in ("model", "env", "task_ids"):
        settings.pop(per_request, None)  # the request decides these
    try:
        config = config_from_request({**settings, "model": "model-of-the-request"})
        check_strategies(config)  # that they exist here; the env is the request's
    except SubmissionError as exc:
        fail(f"GET /scores settings: {exc.field}: {exc.message}")
    return settings


def registered_agents(path: Path | None) -> dict[str, dict[str, Any]]:
    """The operator's named agent configs, each checked as a run config would be.

    Paths and `${VAR}` placeholders in them are the operator's: they are read with the
    server's environment, which is why only this file, never a request, may hold them.
    """
    from tau_bench.config import (
        RunConfigError,
        build_config,
        config_from_mapping,
        normalize_key,
        read_yaml_mapping,
    )
    from tau_bench.service.settings import SERVER_FIELDS
    from tau_bench.service.submission import SubmissionError, check_strategies

    if path is None:
        return {}
    try:
        data = read_yaml_mapping(path)
    except RunConfigError as exc:
        fail(f"--agent-configs: {exc}")
    out: dict[str, dict[str, Any]] = {}
    for name, entry in data.items():
        if not isinstance(entry, dict):
            fail(f"--agent-configs: {name!r} must be a mapping of run settings")
        owned = sorted(SERVER_FIELDS & {normalize_key(str(k)) for k in entry})
        if owned:
            fail(f"--agent-configs: {name}: {owned[0]}: set by the server, not by a config")
        try:
            settings = config_from_mapping(dict(entry))
            check_strategies(build_config(settings))  # a typo is refused now, not per request
        except RunConfigError as exc:  # pydantic's prefix says nothing to an operator
            fail(f"--agent-configs: {name}: {str(exc).replace('Value error, ', '')}")
        except SubmissionError as exc:
            fail(f"--agent-configs: {name}: {exc.field}: {exc.message}")
        out[str(name)] = settings
    return out


def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port.")] = 8000,
    state_dir: Annotated[
        Path | None,
        typer.Option(
            "--state-dir",
            envvar=STATE_DIR_ENV,
            help="Runs database and results files (default: <per-user data dir>/serve).",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar=TOKEN_ENV,
            show_envvar=True,
            show_default=False,
            help="Bearer token clients must send (prefer the environment variable).",
        ),
    ] = None,
    no_auth: Annotated[
        bool,
        typer.Option("--no-auth", help="No authentication (local development; loopback only)."),
    ] = False,
    max_runs: Annotated[
        int,
        typer.Option(
            "--max-runs",
            min=1,
            max=MAX_RUNS_AT_ONCE,
            help="Runs executing at once; others queue (at most --max-unfinished-runs).",
        ),
    ] = 2,
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", help="τ-bench v1 data directory (default: $TAU_BENCH_DATA)."),
    ] = None,
    tau3_data_dir: Annotated[
        Path | None,
        typer.Option("--tau3-data-dir", help="τ³ data directory (default: $TAU3_BENCH_DATA)."),
    ] = None,
    backend: Annotated[
        str | None,
        typer.Option(
            "--backend", help="Where runs' episodes execute: local (default) or ray (scale.md)."
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option("--ray-address", help="Ray cluster of the runs (implies --backend ray)."),
    ] = None,
    workers: Annotated[
        int, typer.Option("--workers", min=1, help="Ray workers per run (> 1: a local Ray).")
    ] = 1,
    agent_configs: Annotated[
        Path | None,
        typer.Option(
            "--agent-configs",
            help="YAML mapping NAME -> run settings (agent_strategy, agent options, ...): the "
            "agents requests may name (`agent_config`); read here, never from a request.",
        ),
    ] = None,
    scores_config: Annotated[
        Path | None,
        typer.Option(
            "--scores-config",
            help="YAML of run settings for GET /scores (same keys as tau run --config).",
            rich_help_panel=SCORES_PANEL,
        ),
    ] = None,
    scores_agent_strategy: Annotated[
        str | None,
        typer.Option(
            "--scores-agent-strategy",
            help="Agent strategy of GET /scores runs (default: tool-calling).",
            rich_help_panel=SCORES_PANEL,
        ),
    ] = None,
    scores_user_strategy: Annotated[
        str | None,
        typer.Option(
            "--scores-user-strategy",
            help="User simulator of GET /scores runs (default: llm).",
            rich_help_panel=SCORES_PANEL,
        ),
    ] = None,
    scores_user_model: Annotated[
        str | None,
        typer.Option(
            "--scores-user-model",
            help="User model of GET /scores runs (default: gpt-4o).",
            rich_help_panel=SCORES_PANEL,
        ),
    ] = None,
    max_unfinished_runs: Annotated[
        int,
        typer.Option(
            "--max-unfinished-runs",
            min=1,
            max=MAX_UNFINISHED_RUNS,
            help="Runs queued or running at most; a request for more is refused (429).",
        ),
    ] = 50,
    scores_timeout: Annotated[
        float,
        typer.Option(
            "--scores-timeout",
            min=1.0,
            max=7 * 24 * 3600.0,
            help="Seconds GET /scores waits for its run before answering 504.",
            rich_help_panel=SCORES_PANEL,
        ),
    ] = 3600.0,
    log_level: Annotated[
        str,
        typer.Option("--log-level", help=f"uvicorn log level: {', '.join(LOG_LEVELS)}."),
    ] = "info",
    max_connections: Annotated[
        int,
        typer.Option(
            "--max-connections",
            min=1,
            max=100_000,
            help="Open client connections at most (kept below the file-descriptor limit).",
        ),
    ] = 1000,
    request_timeout: Annotated[
        float,
        typer.Option(
            "--request-timeout",
            min=0.1,
            max=3600.0,
            help="Seconds a request may take to arrive whole (headers and body).",
        ),
    ] = 30.0,
    max_report_renders: Annotated[
        int,
        typer.Option(
            "--max-report-renders",
            min=1,
            max=MAX_REPORT_RENDERS,
            help="GET /runs/{id}/report pages rendered at once (each a worker thread); "
            "one beyond is a 503 with Retry-After.",
        ),
    ] = 1,
) -> None:
    """Serve the evaluation HTTP API: submit runs, follow them, fetch scores and reports."""
    from tau_bench.server_limits import ServerLimits
    from tau_bench.service.settings import ServiceLimits, default_state_dir
    from tau_bench.service.store import StoreError, lock_state_dir

    if no_auth:
        if host not in LOOPBACK_HOSTS:
            fail(
                f"--no-auth is for local development: listen on 127.0.0.1, not {host!r} "
                f"(or set {TOKEN_ENV})"
            )
        token = None
    else:
        token = (token or "").strip() or None
        if token is None:
            fail(f"no API token: set {TOKEN_ENV} (or --token), or use --no-auth on localhost")
        if len(token) < MIN_TOKEN_LENGTH:
            _note(f"warning: the API token is short (under {MIN_TOKEN_LENGTH} characters)")
    if log_level.lower() not in LOG_LEVELS:
        fail(f"--log-level: unknown level {log_level!r} (one of: {', '.join(LOG_LEVELS)})")
    if backend not in (None, "local", "ray"):
        fail(f"--backend: unknown backend {backend!r} (local or ray)")
    if max_runs > max_unfinished_runs:
        fail(
            f"--max-runs {max_runs} is more than --max-unfinished-runs {max_unfinished_runs}"
            " (the runs the server holds queued or running): lower --max-runs, or raise "
            "--max-unfinished-runs"
        )
    try:
        ray_address = check_ray_address(ray_address)
    except ValueError as exc:
        fail(f"--ray-address: {exc}")
    from tau_bench.config import backend_conflict

    problem = backend_conflict(backend, workers, ray_address)
    if problem is not None:
        fail(problem)
    backend = backend or "local"
    on_ray = backend == "ray" or workers > 1 or ray_address is not None
    if on_ray and ray_address in (None, "local"):  # a Ray started on this machine
        try:
            check_local_ray(workers, max_runs)
        except ValueError as exc:
            fail(str(exc))
    try:
        settings = ServiceSettings(
            backend=backend,
            ray_address=ray_address,
            workers=workers,
            state_dir=(state_dir or default_state_dir()).expanduser(),
            token=token,
            max_runs=max_runs,
            limits=ServiceLimits(max_unfinished_runs=max_unfinished_runs),
            connections=ServerLimits(
                max_connections=max_connections, request_timeout=request_timeout
            ),
            scores_timeout=scores_timeout,
            max_report_renders=max_report_renders,
            data_dir=str(data_dir) if data_dir else None,
            tau3_data_dir=str(tau3_data_dir) if tau3_data_dir else None,
            scores_settings=scores_settings(
                scores_config, scores_agent_strategy, scores_user_strategy, scores_user_model
            ),
            agent_configs=registered_agents(agent_configs),
        )
    except ValueError as exc:  # a token that is not printable ASCII...
        fail(str(exc))
    try:
        settings.prepare()
        lock_state_dir(settings.state_dir)
    except OSError as exc:
        fail(f"cannot use the state directory {settings.state_dir}: {exc.strerror or exc}")
    except StoreError as exc:
        fail(str(exc))

    from tau_adapters.extras import require

    require("service")
    from tau_bench.service import server
    from tau_bench.service.api import create_app

    try:
        sock = server.bind(host, port)  # before the app resumes any run: one clear error
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    try:
        app = create_app(settings)
    except StoreError as exc:
        sock.close()
        fail(str(exc))
    _note(
        f"state in {settings.state_dir}; at most {max_runs} run(s) at once; "
        f"auth {'bearer token' if token else 'DISABLED'}"
    )
    with contextlib.ExitStack() as ray_hold:
        if settings.on_ray:
            _hold_runs_ray(ray_hold, settings, sock)
        server.serve(app, sock, log_level.lower(), GRACEFUL_SHUTDOWN)


def _hold_runs_ray(
    stack: contextlib.ExitStack, settings: ServiceSettings, sock: socket.socket
) -> None:
    """Start the runs' Ray (or reach its cluster) before the server answers, and hold it
    on `stack` until the server stops: `ray.init` takes seconds, and at the first run it
    stalled the event loop (every request, `/health` too); a bad `--ray-address` is now
    one line at start-up rather than a failed run. A local Ray has CPUs for the workers
    of `--max-runs` runs."""
    from tau_bench.runner.backends.ray import ray_for_runs

    address = settings.ray_address
    local = address in (None, "local")
    where = "a local Ray" if local else f"the Ray cluster at {address}"
    _note(f"starting {where}" if local else f"connecting to {where}")
    try:
        stack.enter_context(ray_for_runs(settings.max_runs, start=(address, settings.workers)))
    except ImportError as exc:
        sock.close()
        fail(f"--backend ray: {exc}")
    except (OSError, RuntimeError, ValueError) as exc:  # OSError: ConnectionError, a temp dir
        sock.close()
        fail(f"--backend ray: cannot start or reach {where}: {exc}")
