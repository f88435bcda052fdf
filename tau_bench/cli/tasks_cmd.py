"""`tau tasks list/show/verify`: browse tasks and check that every one is solvable."""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer

app = typer.Typer(no_args_is_help=True)

ENV_OPT = typer.Option(..., "--env", help="Domain: airline or retail.")
SPLIT_OPT = typer.Option(
    None, "--task-split", "--task_split", help="Task split (default: test; τ³: base)."
)
JUDGE_OPT = typer.Option(
    None, "--judge-model", help="τ³: NL-assertion judge (default for verify: assume-met)."
)
DATA_OPT = typer.Option(None, "--data-dir", help="τ-bench data directory.")
MIN_WIDTH = 20  # narrower, a preview says nothing (and 0 or less would slice it backwards)
USER_WIDTH = 20  # `tasks list` in a narrow console: a longer user id is cut with "…"
WIDE_ROOM = 60  # `tasks list`: the console is narrow when outputs and instruction get less
MIN_COLUMN = 10  # `tasks list`: the narrowest instruction (and outputs beside it) column


def _load(env: str, split: str | None, data_dir: Path | None, tasks_file: Path | None = None):  # type: ignore[no-untyped-def]
    from tau_bench.suites import load_domain
    from tau_bench.tasks import load_tasks

    domain = load_domain(env, data_dir)
    tasks = load_tasks(tasks_file) if tasks_file else domain.tasks(split)
    return domain, tasks


def _expected_actions(task) -> list:  # type: ignore[no-untyped-def]
    """Every expected action of a task: a τ³ task's user-side ones too (`action_plan`,
    each with its `requestor`); `task.actions` holds only what the agent plays."""
    plan = getattr(task, "action_plan", None)
    return list(plan) if plan is not None else list(task.actions)


def _is_user_action(action) -> bool:  # type: ignore[no-untyped-def]
    return getattr(action, "requestor", "assistant") == "user"


def _one_line(text: str) -> str:
    """`text` on one line (a τ³ scenario is indented, several lines)."""
    return " ".join(text.split())


@app.command("list")
def list_(
    env: str = ENV_OPT,
    task_split: str | None = SPLIT_OPT,
    data_dir: Path | None = DATA_OPT,
    width: int = typer.Option(
        90, min=MIN_WIDTH, help=f"Instruction preview width ({MIN_WIDTH} or more)."
    ),
) -> None:
    """One line per task: id, user (v1), expected actions, outputs, instruction preview."""
    from rich.cells import cell_len
    from rich.table import Table

    from tau_bench import terminal

    domain, tasks = _load(env, task_split, data_dir)
    task_split = task_split or domain.default_split
    rows = []
    for i, t in enumerate(tasks):
        instruction = _one_line(t.instruction)
        if len(instruction) > width:
            instruction = instruction[: width - 1] + "…"
        row = [str(i), t.user_id or "-", str(len(_expected_actions(t))), ", ".join(t.outputs)]
        rows.append([*row, instruction])
    names = ["id", "user", "actions", "outputs", "instruction"]
    if not any(t.user_id for t in tasks):  # τ³ tasks name no user: no column of "-"
        names.remove("user")
        rows = [[r[0], *r[2:]] for r in rows]
    longest = {n: max([cell_len(n), *(cell_len(r[k]) for r in rows)]) for k, n in enumerate(names)}
    # Fit the console: id, user and actions keep their width (user up to USER_WIDTH when
    # the console is narrow, less when very narrow), the outputs take up to a third of
    # what is left (none in a very narrow console), the instruction the rest; each cell
    # is one line, cut with "…".
    console = terminal.console()
    room = console.width - (3 * len(names) + 1) - longest["id"] - longest["actions"]
    sizes = {"id": longest["id"], "actions": longest["actions"]}
    if "user" in names:
        user = longest["user"] if room - longest["user"] >= WIDE_ROOM else USER_WIDTH
        user = min(longest["user"], user, max(len("user") + 4, room - 2 * MIN_COLUMN - 3))
        sizes["user"] = user
        room -= user
    if room < 2 * MIN_COLUMN + 3:  # no room for the outputs beside the instruction
        names.remove("outputs")
        rows = [[v for n, v in zip(longest, r, strict=True) if n != "outputs"] for r in rows]
        room += 3
    else:
        sizes["outputs"] = max(len("outputs"), min(longest["outputs"], room // 3))
        room -= sizes["outputs"]
    sizes["instruction"] = max(MIN_COLUMN, room)
    table = Table(title=f"{env} / {task_split}: {len(tasks)} tasks")
    for name in names:
        size = sizes[name]
        table.add_column(
            name,
            no_wrap=True,
            overflow="ellipsis",
            min_width=min(size, longest[name]),
            max_width=size,
            justify="right" if name in ("id", "actions") else "left",
        )
    for row in rows:
        table.add_row(*row)
    console.print(table)


@app.command("show")
def show(
    task_ref: str = typer.Argument(
        ..., metavar="TASK", help="Task index in the split, or ENV/ID (tau3/airline/12)."
    ),
    env: str | None = typer.Option(None, "--env", help="Domain (or name it in TASK)."),
    task_split: str | None = SPLIT_OPT,
    data_dir: Path | None = DATA_OPT,
    as_json: bool = typer.Option(False, "--json", help="Print the task as JSON."),
) -> None:
    """A task's instruction, ground-truth actions and required outputs."""
    from rich.text import Text

    from tau_bench import terminal
    from tau_bench.cli.errors import fail
    from tau_bench.cli.lineage_show import parse_show_id, print_v1_counterpart

    try:
        env, ref = parse_show_id(task_ref, env)
        task_id = int(ref)
    except ValueError as exc:
        fail(str(exc) if "int" not in str(exc) else f"task id must be an index, got {task_ref}")
    domain, tasks = _load(env, task_split, data_dir)
    task_split = task_split or domain.default_split
    if not 0 <= task_id < len(tasks):
        fail(f"task id {task_id} out of range (0..{len(tasks) - 1} in {env}/{task_split})")
    task = tasks[task_id]
    if as_json:
        print(json.dumps(task.model_dump(), indent=2, ensure_ascii=False))
        return
    console = terminal.console()
    console.print(
        Text.assemble((f"{env}/{task_split} task {task_id}", "bold"), f"  user: {task.user_id}")
    )
    console.print(Text.assemble("\n", ("Instruction", "bold"), f"\n{task.instruction}\n"))
    actions = _expected_actions(task)  # a τ³ user's own actions too, marked "(user)"
    console.print(Text.assemble(("Ground-truth actions", "bold"), f" ({len(actions)})"))
    for i, a in enumerate(actions):
        whose = " (user)" if _is_user_action(a) else ""
        console.print(f"  {i + 1}. {a.name}({json.dumps(a.kwargs, ensure_ascii=False)}){whose}")
    outputs = ", ".join(task.outputs) or "(none)"
    console.print(Text.assemble("\n", ("Required outputs", "bold"), f": {outputs}"))
    if env.startswith("tau3/"):
        print_v1_counterpart(console, env, task)


@app.command("verify")
def verify(
    env: str = typer.Option(
        ..., "--env", help="Domain(s): airline, retail, a comma-separated list, or all."
    ),
    task_split: str | None = SPLIT_OPT,
    data_dir: Path | None = DATA_OPT,
    tasks_file: Path | None = typer.Option(
        None, "--tasks-file", help="Verify tasks from a JSON file."
    ),
    show_all: bool = typer.Option(False, "--all", help="List every task, not only failures."),
    judge_model: str | None = JUDGE_OPT,
) -> None:
    """Replay every task's ground truth as an agent; exit 0 only if all score 1.0."""
    from rich.table import Table
    from rich.text import Text

    from tau_bench import terminal
    from tau_bench.cli.errors import fail
    from tau_bench.domains import DOMAIN_NAMES
    from tau_bench.terminal import styled
    from tau_bench.verify import verify_tasks

    envs = list(DOMAIN_NAMES) if env == "all" else [e.strip() for e in env.split(",") if e.strip()]
    if not envs:
        fail(f"--env names no domain ({env!r}): give airline, retail, a list, or all")
    if tasks_file and len(envs) != 1:
        fail("--tasks-file needs exactly one --env")
    if any(e.startswith("tau3/") for e in envs):
        from tau_bench.cli.tau3_cmds import verify_tau3

        if not all(e.startswith("tau3/") for e in envs):
            fail("verify τ³ and τ-bench v1 domains in separate commands")
        raise typer.Exit(verify_tau3(envs, task_split, data_dir, judge_model, show_all, tasks_file))
    task_split = task_split or "test"
    console = terminal.console()
    total = passed = 0
    overall = time.perf_counter()
    for name in envs:
        started = time.perf_counter()
        domain, tasks = _load(name, task_split, data_dir, tasks_file)
        results = verify_tasks(domain, tasks)
        elapsed = time.perf_counter() - started
        failed = [r for r in results if r.reward.reward != 1.0]
        total += len(results)
        passed += len(results) - len(failed)
        source = str(tasks_file) if tasks_file else f"{name}/{task_split}"
        table = Table(title=f"Ground-truth verification: {source}")
        for col in ("task", "actions", "error obs.", "outputs", "r_actions", "r_outputs", "reward"):
            table.add_column(col, justify="left" if col == "outputs" else "right")
        for r in results:
            if not show_all and r.reward.reward == 1.0 and len(results) > 20:
                continue
            rr = r.reward
            table.add_row(
                str(r.task_id),
                str(r.actions),
                str(r.errors),
                ", ".join(rr.outputs) or "-",
                f"{rr.r_actions:.1f}",
                "-" if rr.r_outputs is None else f"{rr.r_outputs:.1f}",
                styled(f"{rr.reward:.1f}", "green" if rr.reward == 1.0 else "red"),
            )
        if table.row_count:
            console.print(table)
        status = styled("OK", "green") if not failed else styled(f"{len(failed)} FAILED", "red")
        console.print(
            Text.assemble(
                f"{source}: {len(results) - len(failed)}/{len(results)} tasks score 1.0 "
                f"({elapsed:.2f} s) ",
                status,
            ),
            soft_wrap=True,
        )
        for r in failed[:10]:
            for d in r.reward.diff[:5]:
                console.print(
                    f"  task {r.task_id}: {d.table}[{d.record}].{d.path}: "
                    f"agent={d.agent!r} expected={d.expected!r}"
                )
    if len(envs) > 1:
        console.print(
            f"all: {passed}/{total} tasks score 1.0 ({time.perf_counter() - overall:.2f} s)",
            soft_wrap=True,
        )
    if passed != total:
        raise typer.Exit(1)
