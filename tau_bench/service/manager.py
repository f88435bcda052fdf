"""Queue, start, cancel and resume runs on the server's event loop.

Each run is one asyncio task around the normal runner (`prepare_run` + `Runner`), so
concurrency inside a run, resume and cost accounting are exactly `tau run`'s. At most
`max_runs` run at once; the rest wait as `queued`, in submission order. A run's files go
to `<state>/runs/<id>/`; when that log already exists (the server stopped or died
mid-run, or a client asked to resume) the run continues with the runner's resume
(`RunConfig.resume`), so finished episodes are never run twice.

Cancellation is asyncio task cancellation: the runner then writes the results and
summary of what finished. A cancel asked by a client ends as `cancelled`; a server
shutdown puts the run back to `queued`, and the next server resumes it.

A state database that cannot be written (a full disk) does not stop a run: a progress
write that fails is skipped (progress is live in memory), and a status the run reached
is kept in memory, shown to clients at once, and written when the database takes it
again (retried every `RETRY_UNSAVED` seconds and on every read of the run). A server
that stops before it could write one leaves the run `running` in the database: the next
one resumes it from its log, which keeps every finished episode.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tau_adapters.jsonsafe import printable
from tau_adapters.redaction import secret_values
from tau_bench.config import RunConfig
from tau_bench.metrics import summarize
from tau_bench.records import EpisodeRecord, is_success, now_iso
from tau_bench.service.settings import ServiceSettings
from tau_bench.service.store import (
    CANCELLED,
    COMPLETED,
    FAILED,
    QUEUED,
    RUNNING,
    TERMINAL,
    RunRow,
    RunStore,
    StoreUnavailable,
)
from tau_bench.service.views import scrub

log = logging.getLogger("tau_bench.service")
# Where a stored config keeps the name of the registered agent config it used (not a
# RunConfig field: removed before the run is built, shown instead of the options).
AGENT_CONFIG_KEY = "agent_config"
CANCEL_GRACE = 30.0  # seconds DELETE waits for the runner to write what finished
RETRY_UNSAVED = 5.0  # seconds between two attempts to write what the database refused


class RunNotFound(LookupError):
    pass


class RunStateConflict(RuntimeError):
    """The run is not in a state that allows the request (e.g. cancelling a finished run)."""


class TooManyRuns(RuntimeError):
    """The server already holds its limit of unfinished runs (a 429: retry later)."""


class Progress:
    """A `RunObserver` that keeps the run's records for live progress and summary."""

    def __init__(self, num_trials: int, on_change: Callable[[Progress], None]) -> None:
        self.num_trials = num_trials
        self.total = 0
        self.records: dict[tuple[int | str, int], EpisodeRecord] = {}
        self._on_change = on_change

    def started(self, total: int, done: list[EpisodeRecord]) -> None:
        self.total = total
        self.records = {r.key: r for r in done}
        self._on_change(self)

    def episode_done(self, record: EpisodeRecord) -> None:
        self.records[record.key] = record
        self._on_change(self)

    def finished(self) -> None:
        return None

    def to_dict(self) -> dict[str, Any]:
        records = list(self.records.values())
        errors = sum(1 for r in records if r.is_error)
        return {
            "total": self.total,
            "done": len(records),
            "scored": len(records) - errors,
            "errors": errors,
            "passed": sum(1 for r in records if not r.is_error and is_success(r.reward)),
        }

    def summary(self) -> dict[str, Any]:
        return summarize(list(self.records.values()), self.num_trials, planned=self.total)


class RunManager:
    """Owns the background tasks of runs; every state change goes to the store first."""

    def __init__(self, settings: ServiceSettings, store: RunStore) -> None:
        self.settings = settings
        self.store = store
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._progress: dict[str, Progress] = {}
        self._finished: dict[str, asyncio.Event] = {}
        self._cancel_asked: dict[str, str] = {}  # run id -> the note of its cancel
        self._closing = False
        self._stopped: asyncio.Event | None = None
        self._ray = contextlib.ExitStack()  # the hold on the runs' Ray, start to stop
        # Column values the database refused, per run, until it takes them (`_save`).
        self._unsaved: dict[str, dict[str, Any]] = {}
        self._retrying: asyncio.Task[None] | None = None
        self._progress_failed: set[str] = set()  # runs whose progress write was refused

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> list[str]:
        """Put runs a dead server left `running` back in the queue and start the queue.
        Returns the ids that will resume."""
        self._closing = False
        self._stopped = asyncio.Event()
        if self.settings.on_ray:  # up to max_runs runs at once share one Ray, sized for all
            from tau_bench.runner.backends.ray import ray_for_runs

            self._ray.enter_context(ray_for_runs(self.settings.max_runs))
        resumed = []
        for row in self.store.oldest(RUNNING):
            self.store.update(row.id, status=QUEUED, note="server restarted: the run resumes")
            resumed.append(row.id)
        resumed += [r.id for r in self.store.oldest(QUEUED) if r.id not in resumed]
        self._pump()
        return resumed

    def stopping(self) -> None:
        """The server is stopping: start no more runs, and release every waiter now (a
        long poll answers with the run as it is, `GET /scores` with a 503) - before the
        HTTP server's grace period ends and it cancels open requests. Idempotent."""
        self._closing = True
        if self._stopped is not None:
            self._stopped.set()

    async def stop(self) -> None:
        """Stop every run (they go back to `queued`, to resume on the next start)."""
        self.stopping()
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._retrying is not None:
            self._retrying.cancel()
            self._retrying = None
        self.flush_unsaved()
        for run_id in self._unsaved:
            log.error(
                "run %s: its status could not be written to the state database; the next "
                "server start resumes it from its log",
                run_id,
            )
        self._ray.close()

    @property
    def closing(self) -> bool:
        """True once the server began to stop."""
        return self._closing

    # -- requests ----------------------------------------------------------------------

    def check_capacity(self) -> None:
        """TooManyRuns when the server holds `limits.max_unfinished_runs` queued or running
        runs. Synchronous on the event loop: check and insert cannot interleave."""
        limit = self.settings.limits.max_unfinished_runs
        finished_unsaved = sum(
            1 for values in self._unsaved.values() if values.get("status") in TERMINAL
        )
        if self.store.count_unfinished() - finished_unsaved >= limit:
            raise TooManyRuns(
                f"the server already has {limit} unfinished (queued or running) runs, its "
                "limit: retry when some have finished, or cancel some"
            )

    def submit(
        self, config: RunConfig, origin: str = "api", agent_config: str | None = None
    ) -> RunRow:
        """Queue a validated run; it starts now if a slot is free. `agent_config` is the
        operator's registered config it uses (its name is shown, its options are not)."""
        self.check_capacity()
        run_id = uuid.uuid4().hex
        stored = config.model_dump(mode="json")
        if agent_config is not None:
            stored[AGENT_CONFIG_KEY] = agent_config
        row = RunRow(
            id=run_id,
            status=QUEUED,
            origin=origin,
            created=now_iso(),
            run_name=config.run_name or run_id,
            config=stored,
        )
        self.store.insert(row)
        self._pump()
        return self.get(run_id)

    def get(self, run_id: str) -> RunRow:
        """The run as it is: the database's row, with what it has not taken yet."""
        if run_id in self._unsaved:
            self.flush_unsaved()
        row = self.store.get(run_id)
        if row is None:
            raise RunNotFound(run_id)
        return self.current(row)

    def current(self, row: RunRow) -> RunRow:
        """`row` (read from the database) with the values it has not taken yet."""
        pending = self._unsaved.get(row.id)
        return dataclasses.replace(row, **pending) if pending else row

    def runs(
        self, status: str | None, limit: int, before: str | None = None
    ) -> tuple[list[RunRow], str | None]:
        """A page of runs newest first (`RunStore.runs`), as they are, and the cursor of
        the next page (the page's last run), None when no run is left after it."""
        page = self.store.runs(status, limit + 1, before)
        more = len(page) > limit
        page = page[:limit]
        rows = [self.current(r) for r in page]
        cursor = page[-1].id if more and page else None
        return [r for r in rows if status is None or r.status == status], cursor

    # -- writes that must not be lost ---------------------------------------------------

    def _save(self, run_id: str, **values: Any) -> None:
        """Write a run's columns; kept in memory (and retried) if the database refuses."""
        pending = self._unsaved.get(run_id)
        if pending is not None:  # keep the order: what waits goes first
            pending.update(values)
            self.flush_unsaved()
            return
        try:
            self.store.update(run_id, **values)
        except StoreUnavailable as exc:
            log.warning(
                "run %s: %s; kept in memory, retried every %g s", run_id, exc, RETRY_UNSAVED
            )
            self._unsaved[run_id] = dict(values)
            self._retry_later()

    def flush_unsaved(self) -> None:
        """Write what the database refused before, as far as it takes it now."""
        for run_id, values in list(self._unsaved.items()):
            try:
                self.store.update(run_id, **values)
            except StoreUnavailable:
                return
            self._unsaved.pop(run_id, None)
            log.warning("run %s: the state database took its status again", run_id)

    def _retry_later(self) -> None:
        if self._retrying is not None and not self._retrying.done():
            return
        with contextlib.suppress(RuntimeError):  # no running loop: the next read retries
            self._retrying = asyncio.get_running_loop().create_task(self._retry_unsaved())

    async def _retry_unsaved(self) -> None:
        while self._unsaved:
            await asyncio.sleep(RETRY_UNSAVED)
            self.flush_unsaved()
            self._pump()

    def _save_progress(self, run_id: str, progress: Progress) -> None:
        """The observer's write: one refused is skipped (the live progress is in memory,
        the final status write stores it), never the run's end."""
        try:
            self.store.update(run_id, progress=progress.to_dict())
        except StoreUnavailable as exc:
            if run_id not in self._progress_failed:
                self._progress_failed.add(run_id)
                log.warning("run %s: progress not saved: %s (the run goes on)", run_id, exc)

    def live(self, run_id: str) -> Progress | None:
        """The observer of a run in progress (None when it is not running here)."""
        return self._progress.get(run_id) if run_id in self._tasks else None

    async def cancel(self, run_id: str, note: str = "cancelled") -> RunRow:
        row = self.get(run_id)
        if row.terminal:
            raise RunStateConflict(f"run {run_id} is already {row.status}")
        task = self._tasks.get(run_id)
        if task is None:
            self.store.update(run_id, status=CANCELLED, finished=now_iso(), note=note)
            self._signal(run_id)
            return self.get(run_id)
        self._cancel_asked[run_id] = note
        task.cancel()
        await asyncio.wait({task}, timeout=CANCEL_GRACE)
        return self.get(run_id)

    def resume(self, run_id: str) -> RunRow:
        """Queue a cancelled or failed run again: it continues from its log."""
        row = self.get(run_id)
        if row.status not in (CANCELLED, FAILED):
            raise RunStateConflict(
                f"run {run_id} is {row.status}; only cancelled or failed runs can be resumed"
            )
        self.check_capacity()
        self.store.update(run_id, status=QUEUED, finished=None, error=None, note="resume requested")
        if run_id in self._finished:
            self._finished[run_id].clear()
        self._pump()
        return self.get(run_id)

    async def wait(self, run_id: str, timeout: float | None) -> RunRow:
        """The run once it is finished (completed, failed, cancelled), or as it is when
        `timeout` seconds pass or the server stops."""
        row = self.get(run_id)
        if row.terminal or (timeout is not None and timeout <= 0):
            return row
        done = self._finished.setdefault(run_id, asyncio.Event())
        waiters = [asyncio.ensure_future(done.wait())]
        if self._stopped is not None:
            waiters.append(asyncio.ensure_future(self._stopped.wait()))
        try:
            await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()
        return self.get(run_id)

    # -- running -----------------------------------------------------------------------

    def _signal(self, run_id: str) -> None:
        self._finished.setdefault(run_id, asyncio.Event()).set()

    def _pump(self) -> None:
        """Start queued runs, oldest first, while there are free slots."""
        if self._closing:
            return
        while len(self._tasks) < self.settings.max_runs:
            try:
                queued = self.store.oldest(QUEUED)
            except StoreUnavailable as exc:
                log.warning("no run started: %s", exc)
                self._retry_later()
                return
            waiting = [r for r in queued if r.id not in self._tasks and r.id not in self._unsaved]
            if not waiting:
                return
            row = waiting[0]
            try:
                self.store.update(
                    row.id,
                    status=RUNNING,
                    started=row.started or now_iso(),
                    attempts=row.attempts + 1,
                )
            except StoreUnavailable as exc:  # it stays queued; started on a later pump
                log.warning("run %s not started: %s", row.id, exc)
                self._retry_later()
                return
            self._tasks[row.id] = asyncio.get_running_loop().create_task(
                self._execute(row), name=f"tau-run-{row.id}"
            )

    def _config(self, row: RunRow) -> RunConfig:
        """The stored config with the server's paths; resuming when a log exists."""
        run_dir = self.settings.run_dir(row.id)
        data = dict(row.config)
        data.pop(AGENT_CONFIG_KEY, None)
        data.update(
            log_dir=str(run_dir),
            data_dir=self.settings.data_dir_for(str(data.get("env") or "retail").split(",")),
            run_name=row.run_name,
            quiet=True,
            resume=None,
            **self.settings.run_backend(),
        )
        log_path = run_dir / f"{row.run_name}.jsonl"
        if log_path.exists() and log_path.stat().st_size == 0:
            log_path.unlink()  # died while creating it: nothing to resume
        if log_path.exists():
            data["resume"] = str(log_path)
        return RunConfig.model_validate(data)

    async def _execute(self, row: RunRow) -> None:
        from tau_bench.runner import Runner, prepare_run

        run_id = row.id
        secrets = secret_values(row.config)
        progress = Progress(
            int(row.config.get("num_trials") or 1), lambda p: self._save_progress(run_id, p)
        )
        self._progress[run_id] = progress
        runner: Runner | None = None
        try:
            config = self._config(row)
            plan = await asyncio.to_thread(prepare_run, config)
            self._save(run_id, log_path=str(plan.log_path))
            runner = Runner(plan, progress)
            outcome = await runner.run()
        except asyncio.CancelledError:
            partial = runner.outcome.summary if runner and runner.outcome else None
            if run_id in self._cancel_asked or not self._closing:
                note = self._cancel_asked.get(run_id, "cancelled")
                self._save(run_id, status=CANCELLED, finished=now_iso(), summary=partial, note=note)
            else:
                self._save(
                    run_id,
                    status=QUEUED,
                    summary=partial,
                    note="server stopped: the run resumes when it starts again",
                )
            raise
        except Exception as exc:
            message = scrub(_error_text(exc, self.settings.run_dir(run_id)), secrets)
            if _configuration_problem(exc):  # its message says it all
                log.warning("run %s failed: %s", run_id, message)
            else:  # a fault: the operator gets where it happened (indented: no line of it
                # can pass for one of the server's own)
                detail = scrub("".join(traceback.format_exception(exc)), secrets)
                log.warning("run %s failed: %s\n    %s", run_id, message, _indented(detail))
            self._save(run_id, status=FAILED, finished=now_iso(), error=message)
        else:
            self._save(
                run_id,
                status=COMPLETED,
                finished=now_iso(),
                summary=outcome.summary,
                progress=progress.to_dict(),
                note=None,
            )
        finally:
            self._tasks.pop(run_id, None)
            self._progress.pop(run_id, None)
            self._cancel_asked.pop(run_id, None)
            self._progress_failed.discard(run_id)
            try:
                ended = self.get(run_id).terminal
            except StoreUnavailable:
                ended = self._unsaved.get(run_id, {}).get("status") in TERMINAL
            if ended:
                self._signal(run_id)
            self._pump()


def _configuration_problem(exc: BaseException) -> bool:
    """A problem of the run's settings or of what they name (an agent that does not
    build, a failed pre-flight, a key missing on the Ray nodes), said in one line."""
    from tau_bench.config import RunConfigError

    return isinstance(exc, RunConfigError)


def _error_text(exc: BaseException, run_dir: Path) -> str:
    """One line: a configuration problem reads as its message, anything else names its
    type; lines joined with `; `, control characters escaped, the run's folder (a server
    path) not shown, nor the flags of `tau run` a client cannot set."""
    text = str(exc)
    if not (_configuration_problem(exc) or isinstance(exc, ValueError)):
        text = f"{type(exc).__name__}: {text}"
    for path in (str(run_dir), str(run_dir.parent)):
        text = text.replace(path, "the run's folder")
    text = text.replace(" (check --log-dir)", "").replace("--skip-preflight", "skip_preflight")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return printable("; ".join(lines).replace(":;", ":"))


def _indented(text: str) -> str:
    """A multi-line text (a traceback) for the log: control characters escaped, every
    line after the first indented."""
    return printable(text.rstrip("\n")).replace("\n", "\n    ")
