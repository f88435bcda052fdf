"""The Ray backend: a run's episodes on Ray workers, the driver the only writer.

`RayBackend(config).run(pending, store)` connects to the cluster at `ray_address` (or
starts a local Ray sized for `workers`; for every run's workers when the caller runs
several at once, `ray_for_runs`), starts `workers` episode-worker actors and, when
the run caps providers, one `ProviderLimiter` actor (shared by the process's runs with
the same caps), and hands out (task, trial) keys:
at most `max_concurrency` episodes in flight cluster-wide (fewer when `--provider-limit`
caps the agent strategy itself), each worker its share. Every finished record comes
back to the driver, which stores it (log, progress, results) - so the results contract
is the local one and `--resume` works across backends. When storing a record trips the
run's circuit breaker, nothing new is handed out and the episodes in flight are
cancelled (a record that came back meanwhile is still stored).

Keys and records travel in batches: the driver keeps one `exchange` call in flight per
worker, which starts the keys it carries and returns the records finished since the
last one (as log lines, encoded on the worker). A Ray call costs the driver more CPU
than storing a record, so under load many records share one call; the driver is then
not what limits a cluster (docs/performance.md).

Failures: a worker process that dies is restarted by Ray (`max_restarts`) and the
driver hands its in-flight episodes out again (`backends.dispatch`); the driver stores
one record per key, so nothing is duplicated. An episode whose worker died
`MAX_RESTARTS + 1` times is left out of the log with a line in `errors` (`--resume`
runs it). When the driver goes, so does its job: the actors are not detached, and a
Ray started here shares the driver's fate. A worker that dies holding provider slots
gives them back when its leases expire (`backends.limiter`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import logging
import os
import signal
import socket
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from tau_bench.config import RunConfig
from tau_bench.config.ray_address import check_ray_address, split_host_port
from tau_bench.json_decode import loads
from tau_bench.runner.backends import Key, check_local_ray, share, worker_config
from tau_bench.runner.backends.dispatch import Dispatch
from tau_bench.runner.backends.limiter import LEASE_TTL, ProviderLimiter
from tau_bench.runner.backends.ray_actors import EpisodeWorker, LimiterName, WorkerSetupError
from tau_bench.runner.backends.ray_futures import all_results, reply

MAX_RESTARTS = 3
"""Times Ray restarts a dead worker (and re-runs its in-flight episodes) before the
driver gives its episodes up for this run."""

START_DEADLINE = 300.0
"""Seconds the workers get to be placed on the cluster and to start."""

STOP_DEADLINE = 30.0
"""Seconds workers get to release their agents and clients at the end of a run, and
cancelled episodes get to end when the circuit breaker stops a run."""

PLACING_NOTICE = 10.0
"""Seconds after which workers still waiting to be placed get a warning (`ready`)."""

CONNECT_DEADLINE = 10.0
"""Seconds a cluster's address gets to accept a connection before the run is refused:
Ray's own wait for a GCS that is not there is 20 attempts of ~40 s."""

ENDPOINTS_DEADLINE = 60.0
"""Seconds the workers get to say where their model calls would go (`say_endpoints`;
the first import of litellm on a node takes a few)."""

Store = Callable[[dict[str, Any], bytes], bool]
"""Takes a finished episode's record data and its log line; True when the run must
stop (breaker)."""


_log = logging.getLogger(__name__)


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class WorkerFailure(RuntimeError):
    """A worker's `exchange` raised rather than returning: in practice the worker could
    not build the run (`WorkerSetupError`: data, a package or credentials missing on its
    node), which fails the same way on every try, so the run stops with this one line."""

    @classmethod
    def from_task_error(cls, exc: BaseException) -> WorkerFailure:
        cause = getattr(exc, "cause", None) or exc  # the worker's own exception
        if isinstance(cause, WorkerSetupError):
            return cls(f"a worker could not start the run: {cause}")
        return cls(f"a worker failed: {type(cause).__name__}: {first_line(cause)}")


def _unanswered(reply: asyncio.Future[Any]) -> bool:
    """A worker's start-up call not answered: still waiting, or given up on."""
    return reply.cancelled() or not reply.done()


async def placed_count(actors: list[Any]) -> int | None:
    """How many of `actors` have a process on a node (Ray's actor table gives a placed
    actor's pid while its constructor still runs), read from the GCS without a dashboard;
    None when it cannot be read within `CONNECT_DEADLINE` (through Ray Client, say)."""

    def count() -> int:
        from ray._private import state  # the locked Ray's reader of the GCS's actor table

        return sum(1 for a in actors if (state.actors(actor_id=a._actor_id.hex()) or {}).get("Pid"))

    if not actors:
        return 0
    with contextlib.suppress(Exception):  # a thread and a deadline: never the loop's wait
        return await asyncio.wait_for(asyncio.to_thread(count), CONNECT_DEADLINE)
    return None


def ray_module() -> Any:
    """Ray, or a one-line `MissingExtraError` naming the `ray` extra."""
    from tau_adapters.extras import require

    require("ray")
    import ray

    return ray


def reach(address: str, deadline: float = CONNECT_DEADLINE) -> None:
    """ConnectionError naming the host and port when nothing there accepts a connection
    within `deadline`; `auto` is `RAY_ADDRESS`, else the cluster Ray recorded on this
    machine, as `ray.init` reads them. A GCS address given explicitly is then asked for
    its cluster (`check_gcs`), a Ray Client address pinged (`check_client`): one that
    refuses this process's token, or where something else listens, is one line now
    rather than Ray's half-minute or more of retries."""
    if address == "local":
        return
    if address == "auto" and os.environ.get("RAY_ADDRESS", "").strip():  # as `ray.init` reads it
        try:  # checked as --ray-address is: an error may echo it, masked
            address = check_ray_address(os.environ["RAY_ADDRESS"]) or address
        except ValueError as exc:
            raise ConnectionError(f"RAY_ADDRESS: {exc}") from None
    if address.startswith("ray://"):
        target = split_host_port(address)
    else:
        from ray._private.services import canonicalize_bootstrap_address_or_die

        # The address `ray.init` will dial: `auto` resolved, a loopback host made the
        # node's IP.
        try:
            target = split_host_port(canonicalize_bootstrap_address_or_die(address))
        except ConnectionError:
            if address != "auto":
                raise
            raise ConnectionError(  # Ray's own text names its CLI's `--address`
                "no Ray cluster runs on this machine (`ray start --head` starts one); give "
                "a cluster's address, or leave --ray-address out for a local Ray"
            ) from None
    if target is None:
        return
    host, port = target
    try:
        with socket.create_connection((host, port), timeout=deadline):
            pass
    except OSError as exc:
        why = "no answer" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
        moved = address not in (f"{host}:{port}", "auto") and not address.startswith("ray://")
        named = f", the address Ray dials for {address}" if moved else ""
        raise ConnectionError(
            f"nothing accepts connections at {host}:{port}{named} "
            f"({why}; waited at most {deadline:g} s)"
        ) from None
    # `auto` left as it is finds a cluster of this machine, whose token Ray uses by
    # itself when it has one; an explicit address gets a token only when asked for
    # (`RAY_AUTH_MODE=token`), as `ray.init` does.
    if address.startswith("ray://"):
        check_client(f"{host}:{port}", deadline)
    elif address != "auto":
        check_gcs(f"{host}:{port}", deadline)


def check_gcs(gcs: str, deadline: float = CONNECT_DEADLINE) -> None:
    """ConnectionError when the GCS at `gcs` refuses this process's credentials (a
    cluster with token authentication, Ray's default since 2.59 for clusters started on
    one machine: `ray.init` then retries for ~50 s, printing a native warning a second,
    and says only `Failed to connect`), or does not give its cluster's id within
    `deadline` (something else listens there: Ray waits ~40 s an attempt)."""
    from ray._raylet import GcsClient  # type: ignore[attr-defined]
    from ray.exceptions import AuthenticationError

    outcome: list[Exception | None] = []

    def ask() -> None:
        try:
            GcsClient(address=gcs)  # asks the GCS for the cluster's id, with the token
            outcome.append(None)
        except Exception as exc:  # handed to the caller
            outcome.append(exc)

    asker = threading.Thread(target=ask, name="tau-ray-gcs-check", daemon=True)
    asker.start()
    asker.join(deadline)  # native and not cancellable: left to end on its own
    if not outcome:
        raise ConnectionError(
            f"{gcs} accepts connections but does not answer as a Ray cluster's GCS "
            f"(waited at most {deadline:g} s)"
        )
    failure = outcome[0]
    if isinstance(failure, AuthenticationError):
        raise token_refused(gcs)
    if failure is not None:
        raise ConnectionError(
            f"{gcs} does not answer as a Ray cluster's GCS: {first_line(failure)}"
        )


def check_client(server: str, deadline: float = CONNECT_DEADLINE) -> None:
    """ConnectionError when the Ray Client server at `server` refuses this process's
    credentials, or something else listens there (`ray.init("ray://...")` then tries for
    ~30 s and says `ray client connection timeout`). Asked as Ray's client asks it (a
    ping, with the token when `RAY_AUTH_MODE=token`)."""
    import grpc
    from ray._private.grpc_utils import init_grpc_channel
    from ray.core.generated import ray_client_pb2, ray_client_pb2_grpc

    channel = init_grpc_channel(server, asynchronous=False)
    try:
        ping = ray_client_pb2.ClusterInfoRequest(type=ray_client_pb2.ClusterInfoType.PING)  # type: ignore[attr-defined]
        ray_client_pb2_grpc.RayletDriverStub(channel).ClusterInfo(ping, timeout=deadline)
    except grpc.RpcError as exc:
        code = exc.code()
        if code == grpc.StatusCode.UNAUTHENTICATED:
            raise token_refused(f"ray://{server}") from None
        if code in (
            grpc.StatusCode.UNAVAILABLE,
            grpc.StatusCode.UNIMPLEMENTED,
            grpc.StatusCode.DEADLINE_EXCEEDED,
        ):
            raise ConnectionError(
                f"{server} accepts connections but does not answer as a Ray Client server "
                f"({code.name}; waited at most {deadline:g} s)"
            ) from None
        # anything else is Ray's to judge, as it will when it connects
    finally:
        channel.close()


def token_refused(cluster: str) -> ConnectionError:
    """The error of a cluster that refused this process's token (or its lack of one)."""
    where = "RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token"
    if os.environ.get("RAY_AUTH_MODE", "").strip().lower() != "token":
        return ConnectionError(
            f"the Ray cluster at {cluster} requires token authentication: set "
            f"RAY_AUTH_MODE=token, with the cluster's token in {where} "
            "(`ray get-auth-token` on its head node prints it)"
        )
    return ConnectionError(
        f"the Ray cluster at {cluster} refused this machine's token ({where}): use the "
        "one of its head node (`ray get-auth-token` there)"
    )


def start_ray(address: str | None, workers: int, runs: int = 1) -> bool:
    """Connect to the cluster at `address`, or start a local Ray with a CPU for each of
    the `workers` of each of `runs` runs at once; True when this call started (and so
    must stop) it."""
    ray = ray_module()
    if ray.is_initialized():
        return False
    common: dict[str, Any] = {
        "include_dashboard": False,
        "logging_level": logging.WARNING,
        "log_to_driver": True,
        "configure_logging": True,
    }
    if address and address != "local":
        reach(address)
        with _starting_ray(ray):
            if "://" in address:
                _quiet_client_server_notice()
                _init_client(ray, address, common)
            else:
                ray.init(address=address, **common)
    else:
        check_local_ray(workers, max(1, runs))
        with _starting_ray(ray), _own_process_group():
            ray.init(address="local", num_cpus=max(1, workers) * max(1, runs), **common)
    return True


@contextlib.contextmanager
def _own_process_group() -> Iterator[None]:
    """Around `ray.init` of a local Ray: the services it starts (GCS, raylet, monitor,
    and through the raylet the workers) get a process group of their own, as Ray gives
    them on Windows. In the driver's, a signal to the whole group (`timeout`, `kill --
    -PGID`, a shell's job control) reached them too: the raylet died under the driver's
    core worker while it registered (Ray's native `Failed to register worker to Raylet`,
    exit 1, rather than the run's `terminated (SIGTERM)` line and 143), and Ray's
    monitor printed its traceback. They still die with the driver: Ray starts them
    fate-shared (`PR_SET_PDEATHSIG`); without that (not Linux) they stay in its group,
    where Ray's reaper finds them."""
    from ray._private import services, utils

    plain = getattr(services, "ConsolePopen", None)  # private: absent, Ray's own way
    if plain is None or sys.platform == "win32" or not utils.detect_fate_sharing_support():
        yield
        return

    class _OwnGroupPopen(plain):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("process_group", 0)
            super().__init__(*args, **kwargs)

    services.ConsolePopen = _OwnGroupPopen  # type: ignore[misc]
    try:
        yield
    finally:
        services.ConsolePopen = plain  # type: ignore[misc]


class RayStartTerminated(SystemExit):
    """SIGTERM while `ray.init` ran (5-30 s): Ray's own handler raised `SystemExit`, and
    what Ray had started by then is shut down. A run turns it into its
    `terminated (SIGTERM)` line (exit 143); elsewhere the process exits 143."""


@contextlib.contextmanager
def _starting_ray(ray: Any) -> Iterator[None]:
    """Around `ray.init`. Ray puts in SIGTERM handlers that exit at once (`sys.exit`):
    that exit is caught here, Ray is shut down, and `RayStartTerminated` raised, where
    the process used to end with no line and a Ray worker left behind. Ray's native
    failure-signal handler, which would take SIGTERM from those (a native stack dump,
    exit 134), is kept out of this process; the workers keep theirs."""
    from ray._private import ray_constants

    ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER = True  # read as the core worker starts
    try:
        with _keeping_sigterm():
            yield
    except RayStartTerminated:
        raise
    except SystemExit:
        with contextlib.suppress(Exception):
            ray.shutdown()
        # Ray's core worker, cut short in its start, crashes the interpreter's own
        # teardown (a segfault, exit 139, in most tries): the process ends right
        # after its last line instead, before that teardown.
        atexit.register(_end_now, 143)
        raise RayStartTerminated(143) from None


def _end_now(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


CLIENT_START_ATTEMPTS = 3
"""Times a driver asks a Ray Client server for a session (`_init_client`)."""


def _init_client(ray: Any, address: str, common: dict[str, Any]) -> None:
    """`ray.init` by Ray Client, asked again when the head's client server fails to
    start this driver's session: it forks a server per driver, and that start failed
    about once in five quick runs on a busy head (`Starting Ray client server failed`),
    the next try succeeding. One line when it never starts."""
    for attempt in range(1, CLIENT_START_ATTEMPTS + 1):
        try:
            ray.init(address=address, **common)
            return
        except ConnectionAbortedError as exc:
            said = [line.strip() for line in str(exc).splitlines() if line.strip()]
            if not said or not said[0].startswith("Initialization failure from server"):
                raise
            if attempt == CLIENT_START_ATTEMPTS:
                raise ConnectionError(
                    f"the Ray Client server at {address} failed to start a session for "
                    f"this driver {attempt} times; the last time: {said[-1]}"
                ) from None


SERVER_NOTICE = "SIGTERM handler is not set because current thread is not the main thread"
"""What the Ray Client server logs on every connection (it starts the session's Ray in
a thread), and the client prints on this process's stderr: not this run's concern."""


class _DropServerNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(SERVER_NOTICE)


def _quiet_client_server_notice() -> None:
    """Keep `SERVER_NOTICE` off stderr; every other line the server sends still shows."""
    streamed = logging.getLogger("ray.util.client.logsclient")
    if not any(isinstance(f, _DropServerNotice) for f in streamed.filters):
        streamed.addFilter(_DropServerNotice())


@contextlib.contextmanager
def _keeping_sigterm() -> Iterator[None]:
    """Give SIGTERM back to whoever had it before `ray.init`, which installs a handler
    that exits at once (`sys.exit(15)`): `tau serve`'s graceful shutdown (uvicorn's
    handler) was lost after its first Ray run, and a run's own handler (`SigtermCancels`)
    had to be put back after each start."""
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    finally:
        if before is not None:  # None: not set from Python, nothing to give back
            signal.signal(signal.SIGTERM, before)


class _ProcessRay:
    """The Ray of this process's runs, shared by those running at once. Each run joins it
    and leaves it; the Ray this process started stops when the last one leaves. A caller
    running several runs at once (`tau eval`'s user models, `tau serve`'s runs) holds it
    with `ray_for_runs`: a local Ray is then sized for all of them (each run's workers
    take one CPU each, and would otherwise wait to be placed until `START_DEADLINE`) and
    stays up between them; without that, one run finishing stopped the Ray under the
    others."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0
        self.runs = 1  # runs at once a local Ray started now is sized for
        self.owned = False  # this process started the Ray and must stop it
        # provider limits -> [their limiter actor, runs using it, its name]: runs at
        # once with the same limits share one limiter, so the caps hold for all of them
        # together
        self.limiters: dict[tuple[tuple[str, int], ...], list[Any]] = {}

    def join(self, address: str | None, workers: int) -> None:
        with self.lock:
            started = start_ray(address, workers, self.runs)
            self.owned = self.owned or started
            self.users += 1

    def leave(self) -> None:
        with self.lock:
            self.users -= 1
            if self.users == 0 and self.owned:
                self.owned = False
                ray_module().shutdown()

    def limiter(self, ray: Any, limits: dict[str, int]) -> tuple[Any, LimiterName]:
        """The limiter actor of `limits`, shared with the runs using the same ones, and
        its name (how the workers find it)."""
        key = tuple(sorted(limits.items()))
        with self.lock:
            entry = self.limiters.get(key)
            if entry is None:
                # Named: the workers find it by name (`LimiterName`), not by a handle
                # among their constructor's arguments.
                name = LimiterName(
                    (f"tau-bench-limiter-{uuid.uuid4().hex}", ray.get_runtime_context().namespace)
                )
                actor = (
                    ray.remote(ProviderLimiter)
                    .options(num_cpus=0, max_concurrency=10_000, name=name[0], namespace=name[1])
                    .remote(limits, LEASE_TTL)
                )
                entry = self.limiters[key] = [actor, 0, name]
            entry[1] += 1
            return entry[0], entry[2]

    def release_limiter(self, ray: Any, actor: Any) -> None:
        """One run less uses `actor`; the last one kills it."""
        with self.lock:
            for key, (shared, users, _) in list(self.limiters.items()):
                if shared is actor:
                    if users > 1:
                        self.limiters[key][1] = users - 1
                        return
                    del self.limiters[key]
                    break
        with contextlib.suppress(Exception):
            ray.kill(actor, no_restart=True)

    @contextlib.contextmanager
    def holding(self, runs: int, start: tuple[str | None, int] | None = None) -> Iterator[None]:
        with self.lock:
            self.users += 1
            before, self.runs = self.runs, max(self.runs, runs)
        try:
            if start is not None:
                with self.lock:
                    self.owned = start_ray(*start, self.runs) or self.owned
            yield
        finally:
            with self.lock:
                self.runs = before
            self.leave()


_PROCESS_RAY = _ProcessRay()


def ray_for_runs(
    runs: int, start: tuple[str | None, int] | None = None
) -> contextlib.AbstractContextManager[None]:
    """Hold this process's Ray for `runs` runs at once: a local Ray started meanwhile
    (by the first run that needs it) has CPUs for every run's workers, and stops when
    the hold ends and no run uses it. With `start` (the runs' `ray_address` and workers
    each), Ray is started or reached now, on the calling thread - as `start_ray` does
    for a run, and raising what it raises - so that a server pays for it before it
    answers requests rather than on its event loop at its first run."""
    return _PROCESS_RAY.holding(runs, start)


class RayBackend:
    """One run's workers and limiter on Ray; see the module docstring."""

    def __init__(self, config: RunConfig, runner_cls: type, workers: int | None = None) -> None:
        """`runner_cls` builds each worker's runner (the driver's `Runner` class)."""
        self.config = config
        self.runner_cls = runner_cls
        self.workers = max(1, workers or config.workers)
        self.errors: list[str] = []
        self.worker_stats: list[dict[str, Any]] = []  # from each worker at a graceful stop
        self.actors: list[Any] = []
        self.limiter: Any = None
        self._joined = False  # this run joined the process's Ray (`_ProcessRay`)

    def in_flight_cap(self) -> int:
        """Episodes running at once cluster-wide: `max_concurrency`, or fewer when a
        provider limit names the agent strategy (a hosted agent's live episodes)."""
        cap = self.config.max_concurrency
        limit = self.config.provider_limits.get(self.config.agent_strategy)
        return min(cap, limit) if limit else cap

    def start(self) -> None:
        """Start (or join) Ray and the actors, without waiting for them to be placed
        (`ready`); on failure leave nothing running."""
        ray = ray_module()
        # A local Ray is checked and sized for the workers the run asked for, even when
        # fewer start (no more than its episodes): `--workers 64` is refused on 2 CPUs.
        _PROCESS_RAY.join(self.config.ray_address, max(self.workers, self.config.workers))
        self._joined = True
        try:
            self._start_actors(ray)
        except BaseException:
            self._kill_all(ray)
            self._leave()
            raise

    async def ready(self) -> None:
        """Wait until every worker is placed and started, or raise RuntimeError after
        `START_DEADLINE`, leaving nothing running. The event loop goes on meanwhile:
        `tau serve` answers its requests while a run's workers wait for CPUs. Workers
        still unplaced after `PLACING_NOTICE` seconds get one warning saying so (a busy
        cluster, or one waiting for its autoscaler, would otherwise look hung)."""
        ray = ray_module()
        started = [reply(a.pid.remote()) for a in self.actors]
        notice = asyncio.ensure_future(self._say_unplaced(ray, started))
        try:
            await all_results(started, START_DEADLINE)
        except BaseException as exc:
            waiting = [a for a, f in zip(self.actors, started, strict=True) if _unanswered(f)]
            placed = await placed_count(waiting) if isinstance(exc, TimeoutError) else None
            self._kill_all(ray)
            self._leave()
            if isinstance(exc, TimeoutError):
                if waiting and placed == len(waiting):
                    raise RuntimeError(
                        f"{placed} of {self.workers} workers were placed but did not finish "
                        f"starting within {START_DEADLINE:.0f} s (their output is in Ray's "
                        "logs on their node)"
                    ) from None
                raise RuntimeError(
                    f"{self.workers} workers of 1 CPU each were not all placed within "
                    f"{START_DEADLINE:.0f} s (fewer CPUs in the cluster?)"
                ) from None
            raise
        finally:
            notice.cancel()

    async def _say_unplaced(self, ray: Any, started: list[asyncio.Future[Any]]) -> None:
        await asyncio.sleep(PLACING_NOTICE)
        waiting = [a for a, f in zip(self.actors, started, strict=True) if _unanswered(f)]
        if not waiting:
            return
        placed = await placed_count(waiting)
        if placed == len(waiting):  # on a node, importing or setting up: CPUs are not short
            _log.warning(
                "%d of %d workers are placed and still starting; the run gives up %.0f s "
                "after it started them",
                placed,
                len(started),
                START_DEADLINE,
            )
            return
        unplaced = len(waiting) - (placed or 0)
        cpus = ""
        with contextlib.suppress(Exception):  # a thread and a deadline: never the loop's wait
            asked = asyncio.to_thread(ray.cluster_resources)
            found = await asyncio.wait_for(asked, CONNECT_DEADLINE)
            cpus = f"; the cluster has {found.get('CPU', 0):g} CPUs"
        _log.warning(
            "waiting for the cluster to place %d of %d workers (1 CPU each%s); the run "
            "gives up %.0f s after it started them",
            unplaced,
            len(started),
            cpus,
            START_DEADLINE,
        )

    async def say_endpoints(self, models: dict[str, Any], secrets: list[str]) -> list[str]:
        """Warn, once per model and endpoint, when the workers on some node would send
        a model's calls elsewhere than this driver (their node's endpoint setting, such
        as `OPENAI_BASE_URL` or `ANTHROPIC_API_BASE`, proxy or OpenAI account: its own
        on purpose, such as a model server per node, or one exported in the driver's
        shell only). `models`: `LLMConfig`s by label; `secrets` are masked. Returns the
        warnings; a worker that does not answer within `ENDPOINTS_DEADLINE` is not
        compared."""
        from tau_adapters.redaction import redact_text
        from tau_bench.llm.endpoints import endpoint

        try:
            own = {label: endpoint(model) for label, model in models.items()}
            if not self.actors or not any(own.values()):
                return []
            asked = [reply(actor.endpoints.remote(models)) for actor in self.actors]
            answers = await all_results(asked, ENDPOINTS_DEADLINE)
        except Exception as exc:  # a notice: never the run's failure
            _log.debug("workers' endpoints not compared: %s", exc)
            return []
        nodes: dict[tuple[str, str], set[str]] = {}
        for node, theirs in answers:
            for label, where in theirs.items():
                if where and where != own.get(label):
                    nodes.setdefault((label, where), set()).add(node)
        said = []
        for (label, where), ips in sorted(nodes.items()):
            node = "node" if len(ips) == 1 else "nodes"
            said.append(
                f"{label}: the workers on the {node} at {', '.join(sorted(ips))} send its "
                f"calls to {where}, this driver to {own.get(label)} (a cluster's workers "
                "get their node's environment, not the driver's: OPENAI_BASE_URL or "
                "another provider's endpoint setting, a proxy, OPENAI_ORG_ID; --api-base "
                "and --user-api-base travel with the run; docs/scale.md)"
            )
        said = [redact_text(line, secrets) for line in said]
        for line in said:
            _log.warning("%s", line)
        return said

    def _leave(self) -> None:
        if self._joined:
            self._joined = False
            _PROCESS_RAY.leave()

    def _start_actors(self, ray: Any) -> None:
        per_worker = share(self.in_flight_cap(), self.workers)
        limiter = None
        if self.config.provider_limits:
            self.limiter, limiter = _PROCESS_RAY.limiter(ray, dict(self.config.provider_limits))
        data = worker_config(self.config, self.workers)
        data["max_concurrency"] = per_worker
        actor = ray.remote(EpisodeWorker).options(
            num_cpus=1,
            scheduling_strategy="SPREAD",  # over the cluster's nodes, not packed on one
            # exchange(), cancel(), pid() and close() at once; episodes are the
            # worker's own asyncio tasks, not Ray calls
            max_concurrency=8,
            max_restarts=MAX_RESTARTS,
            # A dead worker's episodes are re-queued by the driver (`Dispatch`): Ray
            # retrying an exchange would run its batch twice.
            max_task_retries=0,
        )
        # The limiter goes by name: an actor handle among a restartable actor's
        # constructor arguments had Ray print a native error line (`... has constructor
        # arguments in the object store and max_restarts > 0 ...`) on every run with
        # `--provider-limit`.
        self.actors = [actor.remote(data, limiter, self.runner_cls) for _ in range(self.workers)]

    async def run(self, keys: list[Key], store: Store) -> None:
        """Run `keys` on the workers, calling `store(record data, log line)` as each
        finishes; when `store` says stop, cancel the episodes in flight and return.
        `WorkerFailure` when a worker cannot run episodes, after the others' episodes in
        flight were cancelled and what had finished was stored."""
        if not self.actors:
            self.start()
            await self.ready()
        ray = ray_module()
        plan = Dispatch(keys, len(self.actors), self.in_flight_cap(), MAX_RESTARTS)
        calls: dict[asyncio.Future[Any], int] = {}  # the one exchange in flight per worker

        def call(worker: int) -> None:
            batch = plan.take(worker)
            if batch or plan.busy(worker):
                ref = self.actors[worker].exchange.remote(batch)
                calls[reply(ref)] = worker

        stop = False
        failure: WorkerFailure | None = None
        try:
            for worker in plan.live():
                call(worker)
            while calls and not stop:
                done, _ = await asyncio.wait(calls, return_when=asyncio.FIRST_COMPLETED)
                for future in done:  # all of them: a finished record is never dropped
                    worker = calls.pop(future)
                    try:
                        lines, lost = future.result()
                    except ray.exceptions.RayActorError as exc:
                        plan.died(worker, first_line(exc))
                        plan.give_up_if_no_workers()
                        continue
                    except ray.exceptions.RayTaskError as exc:
                        # Its keys stay out of the log (`--resume` runs them).
                        failure = failure or WorkerFailure.from_task_error(exc)
                        stop = True
                        continue
                    stop = self._take_back(plan, worker, lines, lost, store) or stop
                    # The stored records live until the run ends and hold no cycles: out
                    # of the collector's passes, which otherwise cost the driver as much
                    # as decoding them (a run of 2,000 episodes froze ~150 objects of
                    # cyclic garbage along with them).
                    gc.freeze()
                if not stop:  # refill: the workers that answered, and idle ones (re-queued keys)
                    for worker in plan.live():
                        if worker not in calls.values():
                            call(worker)
            if stop:
                await self._cancel(plan, calls, store)
            if failure is not None:
                raise failure
        finally:
            for future in calls:
                future.cancel()
            self.errors += plan.errors

    def _take_back(
        self,
        plan: Dispatch,
        worker: int,
        lines: list[bytes],
        lost: list[tuple[Key, str]],
        store: Store,
    ) -> bool:
        """Store what one exchange handed back; True when the run must stop."""
        stop = False
        for line in lines:
            data = loads(line)
            if plan.finished(worker, (data["task_id"], data["trial"])):
                stop = store(data, line) or stop
        for key, reason in lost:
            plan.lost(worker, (key[0], key[1]), reason)
        return stop

    async def _cancel(
        self, plan: Dispatch, calls: dict[asyncio.Future[Any], int], store: Store
    ) -> None:
        """Cancel the episodes in flight (left out of the log: `--resume` runs them),
        storing any that finished before its cancellation took effect."""
        for worker in set(calls.values()):
            with contextlib.suppress(Exception):
                self.actors[worker].cancel.remote()
        if not calls:
            return
        ended, _ = await asyncio.wait(calls, timeout=STOP_DEADLINE)
        for future in ended:
            worker = calls.pop(future)
            if not future.cancelled() and future.exception() is None:
                lines, lost = future.result()
                self._take_back(plan, worker, lines, lost, store)

    def _kill_all(self, ray: Any) -> None:
        for actor in self.actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        if self.limiter is not None:
            _PROCESS_RAY.release_limiter(ray, self.limiter)
        self.actors, self.limiter = [], None

    async def stop(self, graceful: bool = True) -> None:
        """Release the workers (letting them close their clients when `graceful`), kill
        the actors, and leave the process's Ray (stopped when this process started it
        and no other run or `ray_for_runs` holds it)."""
        ray = ray_module()
        if graceful and self.actors:
            refs = [a.close.remote() for a in self.actors]
            with contextlib.suppress(Exception):
                closing = [reply(r) for r in refs]
                self.worker_stats = await all_results(closing, STOP_DEADLINE)
        self._kill_all(ray)
        self._leave()
