"""Running evaluations: plan (`plan`), run (`core`), where episodes run (`backends`:
Ray), `tau eval` (`evaluation`). The names below are the library's entry points."""

from tau_bench.runner.backends import worker_config
from tau_bench.runner.core import (
    NO_MODEL_USERS,
    Runner,
    RunObserver,
    RunOutcome,
    run,
)
from tau_bench.runner.evaluation import EvalOutcome, eval_report, prepare_eval, run_eval
from tau_bench.runner.plan import Key, RunPlan, TaskId, TaskRef, prepare_run, task_data_hash

__all__ = [
    "NO_MODEL_USERS",
    "EvalOutcome",
    "Key",
    "RunObserver",
    "RunOutcome",
    "RunPlan",
    "Runner",
    "TaskId",
    "TaskRef",
    "eval_report",
    "prepare_eval",
    "prepare_run",
    "run",
    "run_eval",
    "task_data_hash",
    "worker_config",
]
