"""The FastAPI app of `tau serve`: routes, bearer auth, error shapes.

Thin on purpose: validation lives in `submission`, state in `store`/`manager`, files in
`artifacts`. Every error is `{"detail": "...", "field": ...}` (field when one setting is
at fault), so an orchestrator can show it as is. Blocking work (reading data and logs,
rendering) runs in worker threads so the event loop keeps serving and running episodes.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

try:
    from fastapi import APIRouter, FastAPI, HTTPException, Query, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import HTMLResponse, JSONResponse, Response
except ModuleNotFoundError:  # one line naming the extra, not a traceback
    from tau_adapters.extras import require

    require("service")
    raise

from tau_adapters.redaction import secret_values
from tau_bench.config import RunConfig
from tau_bench.service import artifacts
from tau_bench.service.guard import ClientGone, client_settings, read_body
from tau_bench.service.manager import RunManager, RunNotFound, RunStateConflict, TooManyRuns
from tau_bench.service.reports import ReportCache, ReportsBusy
from tau_bench.service.request_guard import RequestGuard
from tau_bench.service.scores_compat import failure_reason, split_model
from tau_bench.service.settings import ServiceSettings
from tau_bench.service.store import (
    CANCELLED,
    COMPLETED,
    FAILED,
    STATUSES,
    RunRow,
    RunStore,
    StoreUnavailable,
    lock_state_dir,
    unlock_state_dir,
)
from tau_bench.service.submission import (
    PROBE_RUN_NAME,
    SubmissionError,
    check_runnable,
    config_from_request,
    parse_body,
)
from tau_bench.service.views import links, run_view, scrub

JSONL = "application/x-ndjson"
RETRY_AFTER = "5"  # seconds a client is told to wait after a 429 or 503
MAX_ID_SHOWN = 64  # characters of an unknown run id an error repeats


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tau-adapters")
    except PackageNotFoundError:
        return "unknown"


def _validation_field(loc: tuple[Any, ...] | list[Any]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    return parts[0] if parts else "body"


async def _client_gone(request: Request) -> None:
    """Returns when the client has disconnected (the ASGI server's `http.disconnect`)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass  # the (empty) body of the request; the next message waits for the client


def _finished_episodes(row: RunRow) -> int | None:
    """Episodes a finished run is known to have recorded (None unless it finished)."""
    if not row.terminal:
        return None
    done = row.progress.get("done")
    return done if isinstance(done, int) else 0


def _report_key(row: RunRow) -> tuple[str, ...] | None:
    """What a finished run's report depends on (None while it runs: not cached). A
    resume starts the run again (`attempts`) and appends to its log (its size)."""
    if not row.terminal or not row.log_path:
        return None
    from pathlib import Path

    try:
        stat = Path(row.log_path).stat()
    except OSError:
        return None
    return (row.id, str(row.attempts), row.status, str(stat.st_size), str(stat.st_mtime_ns))


def create_app(settings: ServiceSettings) -> FastAPI:
    """The app; its lifespan opens the state database and starts/stops the runs."""
    settings.prepare()
    store = RunStore(settings.db_path)
    manager = RunManager(settings, store)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        lock_state_dir(settings.state_dir)
        try:
            await manager.start()
            yield
        finally:
            await manager.stop()
            unlock_state_dir(settings.state_dir)

    app = FastAPI(
        title="tau-adapters evaluation service",
        version=_version(),
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # served below, behind the token
    )
    app.router.redirect_slashes = False  # `/runs/` is a 404, not a redirect to `/runs`
    app.add_middleware(RequestGuard, token=settings.token)
    app.state.settings = settings
    app.state.manager = manager
    app.state.store = store
    reports = ReportCache(settings.max_report_renders)

    @app.exception_handler(SubmissionError)
    async def _submission_error(request: Request, exc: SubmissionError) -> JSONResponse:
        headers = {"Connection": "close"} if exc.close else None
        return JSONResponse(exc.to_dict(), status_code=exc.status, headers=headers)

    @app.exception_handler(TooManyRuns)
    async def _too_many_runs(request: Request, exc: TooManyRuns) -> JSONResponse:
        return JSONResponse(
            {"detail": str(exc)}, status_code=429, headers={"Retry-After": RETRY_AFTER}
        )

    @app.exception_handler(StoreUnavailable)
    async def _store_unavailable(request: Request, exc: StoreUnavailable) -> JSONResponse:
        return JSONResponse(
            {"detail": str(exc)}, status_code=503, headers={"Retry-After": RETRY_AFTER}
        )

    @app.exception_handler(ClientGone)
    async def _client_gone_handler(request: Request, exc: ClientGone) -> Response:
        return Response(status_code=400)  # nobody is there to read it

    @app.exception_handler(artifacts.UnreadableLog)
    async def _unreadable_log(request: Request, exc: artifacts.UnreadableLog) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=500)

    @app.exception_handler(ReportsBusy)
    async def _reports_busy(request: Request, exc: ReportsBusy) -> JSONResponse:
        return JSONResponse(
            {"detail": str(exc)}, status_code=503, headers={"Retry-After": RETRY_AFTER}
        )

    @app.exception_handler(RequestValidationError)
    async def _request_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0]
        field = _validation_field(first.get("loc", ()))
        message = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
        return JSONResponse({"detail": f"{field}: {message}", "field": field}, status_code=422)

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok", "version": app.version}

    api = APIRouter()  # the bearer token is checked by `RequestGuard`, before routing

    def _row(run_id: str) -> RunRow:
        try:
            return manager.get(run_id)
        except RunNotFound:
            shown = run_id if len(run_id) <= MAX_ID_SHOWN else run_id[:MAX_ID_SHOWN] + "..."
            raise HTTPException(404, detail=f"no run {shown!r}") from None

    def _view(row: RunRow) -> dict[str, Any]:
        live = manager.live(row.id)
        if live is None:
            return run_view(row)
        return run_view(row, progress=live.to_dict(), summary=live.summary())

    async def _submit(config: RunConfig, origin: str, agent_config: str | None = None) -> RunRow:
        limit = settings.limits.max_episodes
        data_dir = settings.data_dir_for(config.envs)
        like_a_run = str(settings.run_dir(PROBE_RUN_NAME))  # a run's folder, not made
        await asyncio.to_thread(check_runnable, config, data_dir, limit, like_a_run)
        return manager.submit(config, origin, agent_config)

    def _validated(raw: bytes) -> tuple[RunConfig, str | None]:
        """A request body -> its RunConfig and the agent config it names. Blocking (JSON of
        up to a megabyte, task ids): run in a worker thread, off the event loop."""
        data = parse_body(raw)
        merged, agent_config = client_settings(data, settings.agent_configs, settings.limits)
        return config_from_request(merged), agent_config

    @api.get("/openapi.json", include_in_schema=False)
    async def openapi() -> dict[str, Any]:
        return app.openapi()

    @api.get("/agent-configs")
    async def agent_configs() -> dict[str, Any]:
        """The agent configs a request may name (their options stay on the server)."""
        return {
            "agent_configs": {
                name: {"agent_strategy": conf.get("agent_strategy")}
                for name, conf in sorted(settings.agent_configs.items())
            }
        }

    @api.post("/runs", status_code=202)
    async def submit_run(request: Request) -> JSONResponse:
        raw = await read_body(
            request, settings.limits.max_body_bytes, settings.connections.body_timeout
        )
        manager.check_capacity()  # early; `submit` checks again, atomically
        config, agent_config = await asyncio.to_thread(_validated, raw)
        row = await _submit(config, "api", agent_config)
        return JSONResponse(
            {"run_id": row.id, "status": row.status, "links": links(row.id)},
            status_code=202,
            headers={"Location": f"/runs/{row.id}"},
        )

    @api.get("/runs")
    async def list_runs(
        status: str | None = Query(default=None),
        limit: int = Query(default=100, ge=1, le=1000),
        before: str | None = Query(default=None, max_length=64),
    ) -> dict[str, Any]:
        if status is not None and status not in STATUSES:
            raise SubmissionError("status", f"unknown status (one of: {', '.join(STATUSES)})")
        if before is not None:
            try:
                manager.get(before)
            except RunNotFound:
                raise SubmissionError(
                    "before", "no run with this id (use a page's `next`)"
                ) from None
        rows, cursor = manager.runs(status, limit, before)
        page: dict[str, Any] = {"runs": [_view(r) for r in rows]}
        if cursor is not None:
            query: dict[str, Any] = {"limit": limit, "before": cursor}
            if status is not None:
                query["status"] = status
            page["next"] = "/runs?" + urllib.parse.urlencode(query)
        return page

    @api.get("/runs/{run_id}")
    async def get_run(
        run_id: str, wait: float = Query(default=0.0, ge=0.0, le=settings.max_wait)
    ) -> dict[str, Any]:
        _row(run_id)
        return _view(await manager.wait(run_id, wait))

    @api.delete("/runs/{run_id}")
    async def cancel_run(run_id: str) -> dict[str, Any]:
        _row(run_id)
        try:
            return _view(await manager.cancel(run_id))
        except RunStateConflict as exc:
            raise HTTPException(409, detail=str(exc)) from None

    @api.post("/runs/{run_id}/resume", status_code=202)
    async def resume_run(run_id: str) -> dict[str, Any]:
        _row(run_id)
        try:
            resumed = manager.resume(run_id)
        except RunStateConflict as exc:
            raise HTTPException(409, detail=str(exc)) from None
        reports.forget(run_id)
        return _view(resumed)

    async def _records(row: RunRow) -> list[Any]:
        """Finished episodes: the runner's in memory while it runs (its log is written
        in the background), else the log."""
        live = manager.live(row.id)
        if live is not None:
            return artifacts.ordered(live.records.values())
        return await asyncio.to_thread(artifacts.records, row.log_path, _finished_episodes(row))

    async def _scores(row: RunRow) -> Response:
        found = await _records(row)
        text = await asyncio.to_thread(artifacts.scores_jsonl, found)
        return Response(scrub(text, secret_values(row.config)), media_type=JSONL)

    @api.get("/runs/{run_id}/scores")
    async def run_scores(run_id: str) -> Response:
        return await _scores(_row(run_id))

    @api.get("/runs/{run_id}/trajectories/{task:path}")
    async def run_trajectory(
        run_id: str, task: str, trial: int = Query(default=0, ge=0)
    ) -> Response:
        row = _row(run_id)
        found = await _records(row)
        try:
            text = artifacts.trajectory_jsonl(found, task, trial)
        except artifacts.NoResults as exc:
            raise HTTPException(404, detail=str(exc)) from None
        return Response(scrub(text, secret_values(row.config)), media_type=JSONL)

    @api.get("/runs/{run_id}/report")
    async def run_report(run_id: str) -> HTMLResponse:
        row = _row(run_id)

        def render() -> str:
            html = artifacts.report_html(
                row.log_path, f"τ-bench run {row.run_name}", _finished_episodes(row)
            )
            return str(scrub(html, secret_values(row.config)))

        try:
            html = await reports.get(_report_key(row), render)
        except artifacts.NoResults as exc:
            raise HTTPException(404, detail=str(exc)) from None
        return HTMLResponse(html)

    @api.get("/scores")
    async def compat_scores(
        request: Request,
        model: str | None = Query(default=None),
        subset: str | None = Query(default=None),
        task_id: int | None = Query(default=None, alias="taskID", ge=0),
    ) -> Response:
        """MT-bench service compatibility: run `model` on `subset`, wait, return scores."""
        if not model:
            raise SubmissionError("model", "required (the agent model to evaluate)")
        if not subset:
            raise SubmissionError("subset", "required (the domain: airline or retail)")
        provider, name = split_model(model)
        data = {**settings.scores_settings, "model": name, "env": subset}
        if provider is not None:
            data["model_provider"] = provider
        if task_id is not None:
            data["task_ids"] = [task_id]
        manager.check_capacity()
        try:
            row = await _submit(await asyncio.to_thread(config_from_request, data), "scores")
        except SubmissionError as exc:
            if exc.field == "env":
                exc.field = "subset"
            elif exc.field == "task_ids":
                exc.field = "taskID"
            raise
        row = await _await_scores_run(request, row)
        if row.status == COMPLETED:
            reason = failure_reason(await _records(row))
            if reason is None:
                return await _scores(row)
            # A run whose episodes errored is no result: never a 200 with score 0.
            detail = scrub(f"run {row.id} failed: {reason}", secret_values(row.config))
            raise HTTPException(502, detail=detail)
        if row.status == CANCELLED:
            raise HTTPException(409, detail=f"run {row.id} was cancelled")
        if row.status == FAILED:
            raise HTTPException(502, detail=f"run {row.id} failed: {row.error}")
        if manager.closing:
            raise HTTPException(503, detail=f"the server is stopping; run {row.id} resumes later")
        raise HTTPException(
            504,
            detail=f"run {row.id} is still {row.status} after {settings.scores_timeout:g} s; "
            f"follow it at /runs/{row.id}",
        )

    async def _await_scores_run(request: Request, row: RunRow) -> RunRow:
        """The run once finished, the deadline passed or the server stopping; a client
        that goes away meanwhile cancels it (nobody would collect its scores)."""
        done = asyncio.ensure_future(manager.wait(row.id, settings.scores_timeout))
        gone = asyncio.ensure_future(_client_gone(request))
        try:
            await asyncio.wait({done, gone}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            done.cancel()
            raise
        finally:
            gone.cancel()
        if done.done():
            return done.result()
        done.cancel()
        try:
            return await manager.cancel(row.id, note="cancelled: the GET /scores client went away")
        except RunStateConflict:  # it finished meanwhile
            return manager.get(row.id)

    app.include_router(api)
    return app
