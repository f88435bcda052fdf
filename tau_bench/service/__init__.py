"""`tau serve`: the benchmark as an HTTP service for evaluation orchestrators.

Runs are submitted as JSON run configurations, executed in the background by the normal
runner (`tau_bench.runner`), and persisted (SQLite plus the runner's own result files)
under a state directory, so a restarted server lists old runs and resumes unfinished
ones. Layers, each a module with one job:

* `settings` — what the server was started with (state dir, token, limits, /scores defaults);
* `store` — the SQLite table of runs;
* `submission` — a client's JSON -> a validated `RunConfig`, or a 4xx naming the field;
* `manager` — queues, starts, cancels, resumes runs on the event loop;
* `artifacts` — MT-bench scores, trajectories, the HTML report of a run's log;
* `reports` — the HTML report: renders at once bounded, finished runs' pages cached;
* `request_guard` — before routing: the bearer token, JSON bodies, `--no-auth`'s
  loopback-only Host and no cross-site requests;
* `connections` — connection-level bounds on uvicorn (cap, request deadline, quiet accepts);
* `api` — the FastAPI app: routes, error shapes.
"""

from __future__ import annotations

__all__ = ["create_app"]


def __getattr__(name: str) -> object:
    # Lazy: importing the package must not pull FastAPI in (the CLI checks flags first).
    if name == "create_app":
        from tau_bench.service.api import create_app

        return create_app
    raise AttributeError(name)
