"""What `tau serve` was started with: where state lives, who may call, how much runs at once.

Kept apart from the app so tests and the CLI build the same object, and so the
`GET /scores` defaults (which agent and user a compatibility request gets) are one
documented mapping of run settings rather than scattered constants.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tau_bench.config.ray_address import check_ray_address
from tau_bench.server_limits import ServerLimits

TOKEN_ENV = "TAU_SERVE_TOKEN"
STATE_DIR_ENV = "TAU_SERVE_STATE_DIR"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})

MAX_RUNS_AT_ONCE = 64
"""`--max-runs` at most: each running run holds its episodes (up to `max_concurrency`
each) and, on a local Ray, its workers' processes."""

MAX_REPORT_RENDERS = 64
"""`--max-report-renders` at most: each render is a worker thread holding a run's page."""

MAX_UNFINISHED_RUNS = 10_000
"""`--max-unfinished-runs` at most: every queued run is a row and a folder the server keeps."""

# Run settings the server owns: a client may not set them (they name server paths).
SERVER_FIELDS = frozenset({"log_dir", "resume", "data_dir"})

# What `GET /scores?model=...` runs unless the server was started with other settings.
DEFAULT_SCORES_SETTINGS: dict[str, Any] = {"agent_strategy": "tool-calling"}


def default_state_dir() -> Path:
    """`$TAU_SERVE_STATE_DIR`, else the per-user data directory of tau-adapters."""
    explicit = os.environ.get(STATE_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("tau-adapters")) / "serve"


@dataclass(frozen=True)
class ServiceLimits:
    """Upper bounds of what one request may ask for (`tau_bench.service.guard`: 422/413),
    and of the runs a server holds unfinished (`RunManager`: 429)."""

    max_body_bytes: int = 1_000_000
    max_trials: int = 100
    max_task_ids: int = 10_000
    max_episodes: int = 20_000
    max_concurrency: int = 64
    # Runs not finished (queued or running) on the server at once: beyond it a 429.
    max_unfinished_runs: int = 50
    # A deadline a client sets is still a deadline: `episode_timeout`/`turn_timeout` of a
    # year would let one silent agent hold a run slot for that long.
    max_timeout: float = 86_400.0
    max_steps: int = 10_000


@dataclass
class ServiceSettings:
    """Server configuration. `token=None` means no authentication (local development)."""

    state_dir: Path
    token: str | None
    max_runs: int = 2
    data_dir: str | None = None  # τ-bench v1 data (`--data-dir`)
    tau3_data_dir: str | None = None  # τ³ data (`--tau3-data-dir`)
    scores_settings: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_SCORES_SETTINGS))
    max_wait: float = 600.0
    # How long `GET /scores` waits for its run before answering 504 (the run goes on).
    scores_timeout: float = 3600.0
    # Agents with options, registered by the operator; requests name them (`agent_config`).
    agent_configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    limits: ServiceLimits = field(default_factory=ServiceLimits)
    # Connection-level bounds (`--max-connections`, `--request-timeout`): `connections`.
    connections: ServerLimits = field(default_factory=ServerLimits)
    # `GET /runs/{id}/report` renders at once at most (`--max-report-renders`); beyond, a 503.
    max_report_renders: int = 1
    # Where the server's runs execute (`tau serve --backend ray`, docs/scale.md): the
    # operator's choice, never a request's (`guard` refuses these fields).
    backend: str = "local"
    ray_address: str | None = None
    workers: int = 1

    def __post_init__(self) -> None:
        if self.token is not None and not self.token.strip():
            raise ValueError("the API token is empty")
        if self.token is not None and not all("!" <= ch <= "~" for ch in self.token.strip()):
            raise ValueError(
                "the API token must be printable ASCII without spaces (clients send it in "
                "an HTTP header)"
            )
        if not 1 <= self.max_report_renders <= MAX_REPORT_RENDERS:
            raise ValueError(f"max_report_renders must be 1-{MAX_REPORT_RENDERS}")
        if not 1 <= self.max_runs <= min(MAX_RUNS_AT_ONCE, self.limits.max_unfinished_runs):
            raise ValueError(
                f"max_runs must be 1-{MAX_RUNS_AT_ONCE} and at most max_unfinished_runs "
                f"({self.limits.max_unfinished_runs})"
            )
        if not 1 <= self.limits.max_unfinished_runs <= MAX_UNFINISHED_RUNS:
            raise ValueError(f"max_unfinished_runs must be 1-{MAX_UNFINISHED_RUNS:,}")
        if self.backend not in ("local", "ray"):
            raise ValueError(f"unknown backend {self.backend!r} (local or ray)")
        if self.workers < 1:
            raise ValueError("workers must be at least 1")
        if not 0 < self.scores_timeout < float("inf"):
            raise ValueError("scores_timeout must be a positive number of seconds")
        self.ray_address = check_ray_address(self.ray_address)

    def data_dir_for(self, envs: list[str]) -> str | None:
        """The data directory of a run's suite: each suite has its own layout (a run that
        mixes suites reads each from its environment variable or the cache)."""
        tau3 = [e.startswith("tau3/") for e in envs]
        if all(tau3):
            return self.tau3_data_dir
        return None if any(tau3) else self.data_dir

    @property
    def on_ray(self) -> bool:
        """The runs' episodes run on Ray workers (as `RunConfig.on_ray` says of a run)."""
        return self.backend == "ray" or self.workers > 1 or self.ray_address is not None

    def run_backend(self) -> dict[str, Any]:
        """The RunConfig fields every run of this server gets (where episodes run)."""
        return {"backend": self.backend, "ray_address": self.ray_address, "workers": self.workers}

    @property
    def db_path(self) -> Path:
        return self.state_dir / "service.sqlite3"

    @property
    def runs_dir(self) -> Path:
        return self.state_dir / "runs"

    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / run_id

    def prepare(self) -> None:
        """Create the state directory, private to this user (it holds run configs).

        Only a directory the server creates is made private: an existing one keeps its
        mode (`--state-dir /tmp` must not chmod /tmp). One other users may write to is
        refused (they could replace the database or the results)."""
        import stat

        if self.state_dir.exists():
            mode = self.state_dir.stat().st_mode
            if stat.S_ISDIR(mode) and mode & stat.S_IWOTH:
                raise PermissionError(
                    "it is writable by every user: use a directory of its own (one that "
                    "does not exist yet is created private)"
                )
        else:
            self.state_dir.mkdir(parents=True, mode=0o700)
            try:
                self.state_dir.chmod(0o700)  # whatever the umask left
            except OSError:
                pass  # a mounted volume may refuse; the database file is still made private
        if not self.runs_dir.exists():
            self.runs_dir.mkdir(mode=0o700)
