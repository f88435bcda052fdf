"""The τ³ halves of `tau tasks verify` and `tau env exec` (`--env tau3/<domain>`).

verify: each task's expected actions are replayed live and the communicate message
appended, as the conformance vectors were made (`tau_bench.tau3.replay`); the trajectory
is evaluated with the `--judge-model` judge (default `assume-met`). Tasks that fail in
the original too (`tau_bench.tau3.known_failing`) are listed as such and do not fail
the command.

exec: JSON lines in, JSON lines out; `{"reset": true[, "task_id": ID]}` starts again
from the pristine DB or from the task's initial state.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from tau_bench.cli.errors import fail
from tau_bench.output_files import shown_path

__all__ = ["exec_tau3", "verify_tau3"]


def verify_tau3(
    envs: list[str],
    split: str | None,
    data_dir: Path | None,
    judge_model: str | None,
    show_all: bool,
    tasks_file: Path | None = None,
) -> int:
    """Print the verification table of each domain; the exit status (0: all good)."""
    from rich.table import Table
    from rich.text import Text

    from tau_bench import terminal
    from tau_bench.suites import load_domain
    from tau_bench.suites.tau3 import ASSUME_MET, make_judge
    from tau_bench.tau3.known_failing import known_failing
    from tau_bench.tau3.llm_judge import check_prompts, needs_judge
    from tau_bench.terminal import styled

    console = terminal.console()
    bad_total = 0
    for env in envs:
        started = time.perf_counter()
        domain: Any = load_domain(env, data_dir)
        judge = make_judge(judge_model or ASSUME_MET, {"root": domain.root})
        domain = domain.with_judge(judge)
        tasks = domain.load_tasks_file(tasks_file) if tasks_file else domain.tasks(split)
        if tasks_file and not tasks:  # nothing verified is no verdict (as `tau run` says)
            fail(f"tasks file {shown_path(tasks_file)} has no tasks")
        if (judge_model or ASSUME_MET) != ASSUME_MET and any(needs_judge(t.task) for t in tasks):
            check_prompts(domain.root)  # an offline copy: one line, as `tau run` says it
        results = domain.verify(tasks)
        elapsed = time.perf_counter() - started
        expected_fail = known_failing(domain.loaded.name)
        source = str(tasks_file) if tasks_file else f"{env}/{split or domain.default_split}"
        table = Table(title=f"Ground-truth verification: {source}")
        for col in ("task", "id", "actions", "error obs.", "basis", "reward", "status"):
            table.add_column(col, justify="left" if col in ("id", "basis", "status") else "right")
        ok = known = bad = 0
        problems: list[str] = []
        for r in results:
            reward = None if r.reward is None else r.reward.reward
            errors = sum(1 for s in r.replay.steps if s.result.error)
            if reward == 1.0:
                ok += 1
                status = styled("ok", "green")
            elif r.task.id in expected_fail:
                known += 1
                status = Text.assemble(
                    ("fails in the original", "yellow"), f": {expected_fail[r.task.id]}"
                )
            else:
                bad += 1
                status = (
                    styled("FAILED", "red")
                    if r.error is None
                    else Text.assemble(("error", "red"), f": {r.error}")
                )
                failures = r.reward.evaluation.failures if r.reward is not None else []
                problems += [f"  task {r.task_id} ({r.task.id}): {f}" for f in failures[:5]]
            if not show_all and reward == 1.0 and len(results) > 20:
                continue
            table.add_row(
                str(r.task_id),
                r.task.id,
                str(len(r.replay.steps)),
                str(errors),
                ",".join(r.task.task.reward_basis),
                "-" if reward is None else f"{reward:.1f}",
                status,
            )
        if table.row_count:
            console.print(table)
        summary = f"{env}: {ok}/{len(results)} tasks score 1.0"
        if known:
            summary += f", {known} fail in the original too (known issues)"
        verdict = styled("OK", "green") if not bad else styled(f"{bad} FAILED", "red")
        console.print(
            Text.assemble(f"{summary} (judge {domain.judge_name}; {elapsed:.2f} s) ", verdict),
            soft_wrap=True,
        )
        for line in problems[:20]:
            console.print(line)
        bad_total += bad
    return 1 if bad_total else 0


def _reply(out: TextIO, obj: dict[str, Any]) -> None:
    out.write(json.dumps(obj, ensure_ascii=False) + "\n")
    out.flush()


def exec_tau3(
    env: str,
    data_dir: Path | None,
    deterministic_ids: bool,
    read_request: Callable[[str, int], Any],
) -> None:
    """`tau env exec --env tau3/<domain>`: the loop over stdin. `read_request(line,
    lineno)` decodes a line or fails with `error: line N: ...` (v1's, passed in by
    `env_cmd`, so both read lines alike)."""
    from tau_bench.suites import load_domain
    from tau_bench.suites.tau3_env import observation_line

    domain: Any = load_domain(env, data_dir)
    environment = domain.new_env(deterministic_ids=deterministic_ids)
    out = sys.stdout
    for lineno, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        request = read_request(line, lineno)
        if not isinstance(request, dict):
            fail(f"line {lineno}: expected a JSON object")
        if request.get("reset") is True:
            task = None
            if request.get("task_id") is not None:
                task_id = str(request["task_id"])
                task = _find_task(domain, task_id)
                if task is None:
                    fail(f"line {lineno}: no task {task_id!r} in {env}")
            environment = domain.new_env(task, deterministic_ids=deterministic_ids)
            _reply(
                out,
                {
                    "data_hash": environment.data_hash(),
                    "user_data_hash": environment.user_data_hash(),
                },
            )
            continue
        name = request.get("name")
        kwargs = request.get("kwargs", {})
        requestor = request.get("requestor", "assistant")
        if not isinstance(name, str) or not isinstance(kwargs, dict):
            fail(
                f'line {lineno}: expected {{"name": ..., "kwargs": {{...}}, "requestor": ...}} '
                f'or {{"reset": true}}'
            )
        if requestor not in ("assistant", "user"):
            fail(f"line {lineno}: requestor must be assistant or user, got {requestor!r}")
        output = environment.execute(name, kwargs, requestor=requestor)
        out.write(observation_line(environment, output) + "\n")
        out.flush()


def _find_task(domain: Any, task_id: str) -> Any:
    """The task with τ³ id `task_id`, in any split of the domain (base first)."""
    for split in (domain.default_split, *domain.splits):
        for task in domain.tasks(split):
            if task.id == task_id:
                return task
    return None
