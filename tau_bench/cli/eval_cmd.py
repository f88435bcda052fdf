"""`tau eval --config eval.yaml`: user models x tasks x k samples -> pass@k and pass^k.

Thin: read the eval file (flags override it), let `tau_bench.runner` prepare and run
one run per user model, print the table and say where the JSON report is.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from tau_bench.cli.errors import fail
from tau_bench.cli.run_progress import RichProgress


def eval(
    config: Annotated[
        Path, typer.Option("--config", help="YAML eval file (see docs/training.md).")
    ],
    user_models: Annotated[
        str | None, typer.Option("--user-models", help="m1,m2,...: overrides the file's.")
    ] = None,
    num_samples: Annotated[
        int | None,
        typer.Option("--num-samples", help="Samples (trials) per user model and task."),
    ] = None,
    max_steps: Annotated[
        int | None,
        typer.Option("--max-steps", help="Agent actions (tool calls + messages) per episode."),
    ] = None,
    max_concurrency: Annotated[
        int | None,
        typer.Option("--max-concurrency", help="Live episodes, shared by the user models."),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="Eval name (file names).")] = None,
    log_dir: Annotated[
        str | None, typer.Option("--log-dir", help="Runs go to <log-dir>/<name>/.")
    ] = None,
    output: Annotated[
        str | None,
        typer.Option("--output", help="Report JSON (default <log-dir>/<name>.eval.json)."),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue an interrupted eval of the same name.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bar.")] = False,
    backend: Annotated[
        str | None,
        typer.Option("--backend", help="Where episodes run: local or ray (docs/scale.md)."),
    ] = None,
    ray_address: Annotated[
        str | None, typer.Option("--ray-address", help="Ray cluster (implies --backend ray).")
    ] = None,
    workers: Annotated[
        int | None, typer.Option("--workers", min=1, help="Ray workers (> 1: a local Ray).")
    ] = None,
    llm_path: Annotated[
        str | None, typer.Option("--llm-path", help="Model calls: auto, litellm or direct.")
    ] = None,
) -> None:
    """Several user models x tasks x k samples: pass@k and pass^k."""
    from tau_bench.config import RunConfigError, eval_config_from_mapping, read_yaml_mapping

    overrides = {
        "user_models": user_models,
        "num_samples": num_samples,
        "max_steps": max_steps,
        "max_concurrency": max_concurrency,
        "name": name,
        "log_dir": log_dir,
        "output": output,
        "backend": backend,
        "ray_address": ray_address,
        "workers": workers,
        "llm_path": llm_path,
    }
    try:
        data = read_yaml_mapping(config)
        data = {str(k).replace("-", "_"): v for k, v in data.items()}
        data.update({k: v for k, v in overrides.items() if v is not None})
        cfg = eval_config_from_mapping(data)
    except RunConfigError as exc:
        fail(str(exc))
    from tau_bench.output_files import same_file

    if same_file(cfg.output_path, config):
        fail(f"--output {cfg.output_path} is the eval's --config file: choose another output")
    _execute(cfg, resume=resume, quiet=quiet, config_path=config)


def _execute(cfg: Any, *, resume: bool, quiet: bool, config_path: Path) -> None:
    import asyncio

    from tau_bench import terminal
    from tau_bench.config import RunConfigError
    from tau_bench.data.paths import DataDirError
    from tau_bench.runner import prepare_eval, run_eval
    from tau_bench.suites import UnknownDomainError, UnknownSplitError
    from tau_bench.tasks import TaskFileError

    try:
        plans = prepare_eval(cfg, resume=resume)
    except (
        RunConfigError,
        TaskFileError,
        UnknownDomainError,
        UnknownSplitError,
        DataDirError,
    ) as exc:
        fail(str(exc))
    err = terminal.console(stderr=True)
    progress = RichProgress(err, enabled=not quiet and err.is_terminal)
    total = sum(len(p.order) for p in plans.values())
    done = [
        r
        for p in plans.values()
        for k, r in p.existing.items()
        if k in set(p.order) and not r.is_error
    ]
    progress.started(total, done)
    observers = {model: _Forward(progress) for model in plans}
    try:
        outcome = asyncio.run(run_eval(cfg, plans, observers))
    except RunConfigError as exc:
        progress.finished()
        fail(str(exc))
    except KeyboardInterrupt:
        progress.finished()
        print(
            f"interrupted: finished episodes are saved in {cfg.folder}; "
            f"continue with: tau eval --config {config_path} --resume",
            file=err.file,
            flush=True,
        )
        raise SystemExit(130) from None
    progress.finished()
    # Wide when piped, so the table's k columns are not squeezed into 80 characters.
    out = terminal.console(width=None if sys.stdout.isatty() else 200)
    out.print(render_eval(outcome.report))
    from tau_bench.analysis.variance import parts_from_dict, variance_table

    out.print(
        variance_table({outcome.report["name"]: parts_from_dict(outcome.report.get("variance"))})
    )
    print(f"report: {outcome.path}", file=err.file, flush=True)
    errors = outcome.report["overall"]["errors"]
    if errors:
        print(
            f"{errors} episode(s) failed with errors (not scored); re-run them with: "
            f"tau eval --config {config_path} --resume",
            file=err.file,
            flush=True,
        )
        if not outcome.report["overall"]["scored"]:
            raise SystemExit(1)


class _Forward:
    """A run's observer that only forwards finished episodes to the shared progress bar."""

    def __init__(self, progress: RichProgress) -> None:
        self.progress = progress

    def started(self, total: int, done: list[Any]) -> None:
        return None

    def episode_done(self, record: Any) -> None:
        self.progress.episode_done(record)

    def finished(self) -> None:
        return None


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.4f}"


def render_eval(report: dict[str, Any]) -> Any:
    """The report as a rich table: a row per user model, the overall row, the spread."""
    from rich.table import Table

    ks = [str(k) for k in report["ks"]]
    spread = report["spread"]["pass_hat_1"]
    caption = (
        f"pass^1 across user models: min {_fmt(spread['min'])} ({spread['min_user_model']}), "
        f"max {_fmt(spread['max'])} ({spread['max_user_model']}), "
        f"stdev {_fmt(spread['stdev'])}"
    )
    table = Table(
        title=f"τ-bench eval {report['name']} ({report['num_samples']} samples per task)",
        caption=caption,
    )
    table.add_column("user model", style="bold")
    for column in ("tasks", "scored", "errors", "avg reward"):
        table.add_column(column, justify="right")
    for k in ks:
        table.add_column(f"pass@{k}", justify="right")
    for k in ks:
        table.add_column(f"pass^{k}", justify="right")

    def row(label: str, m: dict[str, Any], style: str | None = None) -> None:
        table.add_row(
            label,
            str(m["tasks"]),
            str(m["scored"]),
            str(m["errors"]),
            _fmt(m["avg_reward"]),
            *(_fmt(m["pass_at_k"][k]) for k in ks),
            *(_fmt(m["pass_hat_k"][k]) for k in ks),
            style=style,
        )

    for model, metrics in report["per_user_model"].items():
        row(model, metrics)
    row("overall", report["overall"], style="bold")
    return table
