"""A run's episodes on Ray workers (`--backend ray`, or `--workers N`): the driver's side.

This process stays the only writer (log, observer, results, summary); the workers
(`tau_bench.runner.backends.ray`) return each finished record. Kept apart from the local
`Runner` loop so that `core` holds one engine's control flow, not two.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING

from tau_adapters.redaction import mask_values
from tau_adapters.registry import UnknownAdapterError, load_builder
from tau_bench.config import RunConfigError
from tau_bench.records import EpisodeRecord
from tau_bench.runner.backends import is_entry_point
from tau_bench.runner.preflight import run_models

if TYPE_CHECKING:
    from tau_bench.runner.core import Runner, RunOutcome


def check_workers(runner: Runner) -> None:
    """Ray workers rebuild the agent from its entry point: an injected provider,
    user factory or in-process registration would silently not be there."""
    if runner._provider is not None or runner._user_factory is not None:
        raise RunConfigError(
            "the ray backend (workers > 1) needs the agent and user built from the config "
            "(an injected provider or user factory cannot be sent to worker processes)"
        )
    name = runner.config.agent_strategy
    try:  # an unknown name is told as such, as on the local backend
        load_builder(name)
    except UnknownAdapterError as exc:
        raise RunConfigError(str(exc)) from None
    except Exception:
        pass  # a missing extra or a broken builder: reported when the provider is built
    if not is_entry_point(name):
        raise RunConfigError(
            f"agent strategy {name!r} is registered in this process only "
            "(tau_adapters.registry.register), so worker processes cannot build it: "
            "declare it as a 'tau_adapters' entry point, or run locally (workers=1)"
        )


async def run_on_workers(runner: Runner) -> RunOutcome:
    """The pending episodes on Ray workers (`tau_bench.runner.backends.ray`).

    This process stays the only writer (log, observer, results, summary); workers
    return each finished record. Episodes a worker could not finish, even restarted,
    stay out of the log (`--resume` re-runs them) with a line in `worker_errors`; on
    cancellation the workers are killed and what finished is written, as locally. The
    circuit breaker stops the run as locally (`stopped_early`), except that episodes in
    flight are cancelled rather than awaited: they stay out of the log for `--resume`."""
    from tau_bench.runner.backends.ray import RayBackend, RayStartTerminated, WorkerFailure
    from tau_bench.runner.types import RunTerminated

    runner._started = time.perf_counter()
    check_workers(runner)
    runner._preflight_user()
    provider = runner._build_provider()  # fail fast on configuration, then close
    secrets = runner.secrets(provider)  # the workers' too (and the run's): masked in errors
    try:
        runner._describe(provider)  # the manifest (and a resumed run's agent check)
        await runner._preflight(provider)
        models = run_models(runner.config, provider, runner.plan.tasks.values())
    finally:
        with contextlib.suppress(Exception):
            await provider.aclose()
    pending = runner.plan.pending
    # A worker with no episode to run would only pay its start-up.
    backend = RayBackend(
        runner.config, type(runner), min(runner.config.workers, max(1, len(pending)))
    )
    try:  # before the log: a missing extra or a bad address writes nothing
        backend.start()
        await backend.ready()
        await backend.say_endpoints(models, secrets)
    except ImportError as exc:
        raise RunConfigError(f"--backend ray: {exc}") from None
    except RayStartTerminated:
        raise RunTerminated("terminated (SIGTERM)") from None
    except RunConfigError:
        raise
    except (OSError, RuntimeError, ValueError) as exc:  # OSError: ConnectionError, a temp dir
        where = runner.config.ray_address or "a local Ray"
        raise RunConfigError(f"--backend ray: cannot start or reach {where}: {exc}") from None
    runner.sigterm.claim()  # from `ray.init`'s handlers: SIGTERM stops the run as Ctrl-C
    runner._log = runner._open_log()
    if runner.observer is not None:
        planned = set(runner.plan.order)
        done = [r for k, r in runner._records.items() if k in planned and not r.is_error]
        runner.observer.started(len(runner.plan.order), done)
    interrupted = False
    try:
        # One circuit breaker for both backends: `_finish` counts each record as it
        # comes back; when it trips, the backend cancels what is in flight.
        await backend.run(
            pending, lambda data, line: runner._finish(EpisodeRecord.from_own_line(data), line)
        )
    except WorkerFailure as exc:
        interrupted = True
        raise RunConfigError(f"--backend ray: {mask_values(str(exc), secrets)}") from None
    except BaseException:
        interrupted = True
        raise
    finally:
        runner.sigterm.disarm()  # the files are being written: a SIGTERM now waits
        await backend.stop(graceful=not interrupted)
        runner.worker_stats = backend.worker_stats  # CPU and memory per worker (benchmarks)
        if runner.observer is not None:
            runner.observer.finished()
        await runner.close_log()
        runner._finalize(interrupted, mask_values(backend.errors, secrets) or None)
    assert runner.outcome is not None
    return runner.outcome
