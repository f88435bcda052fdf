"""The τ³ side of `tau rescore` and `tau export`: τ² results files in and out.

`results_cmd` calls these when `--env tau3/<domain>` / `--format tau2` is given, so the
v1 paths stay as they were. User errors print one line and exit 2 (`fail`). What comes
from the file (task ids) is printed escaped (`printable`); what the rescore writes and
prints has the judge's API key masked (`rescore_secrets`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tau_adapters.jsonsafe import printable
from tau_adapters.redaction import environment_secrets, mask_values
from tau_bench.cli.errors import fail, note
from tau_bench.cli.output_paths import check_output
from tau_bench.output_files import shown_path

__all__ = ["export_tau2", "rescore_tau2"]


def _tau3_domain(env: str, data_dir: str | None) -> Any:
    from tau_bench.suites import load_domain

    return load_domain(env, data_dir)  # unknown env / data dir: run_cli reports them


def _judge(model: str | None, root: Path) -> Any:
    from tau_bench.suites.tau3 import make_judge

    return make_judge(model, {"root": root})


def rescore_secrets() -> list[str]:
    """What a rescore never writes or prints: the NL judge reads its API key from the
    environment (OPENAI_API_KEY...), so every secret-looking environment value; a judge
    may echo it into its reasoning or an error."""
    return environment_secrets()


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def rescore_tau2(
    results: Path, env: str, judge_model: str | None, output: Path | None, data_dir: str | None
) -> None:
    """Re-grade a τ² results file against today's τ³ tasks; write it back with -o."""
    from tau_bench.results import write_json_atomic
    from tau_bench.tau3.interchange.rescore import Tau2FileError, read_results, rescore_results

    if "," in env:
        fail("a τ² results file holds one domain: pass one --env tau3/<domain>")
    if results.is_dir():
        fail(f"rescore takes one results file, not a folder: {results}")
    try:
        data, model = read_results(results)
    except Tau2FileError as exc:
        fail(str(exc))
    domain = _tau3_domain(env, data_dir)
    judge = _judge(judge_model, domain.root)
    secrets = rescore_secrets()
    try:
        out = rescore_results(data, model, domain.loaded, judge)
    except Tau2FileError as exc:
        fail(mask_values(str(exc), secrets))
    for task_id, trial, before, after in out.changed:
        print(printable(f"task {task_id} trial {trial}: {_fmt(before)} -> {_fmt(after)}"))
    if out.kept_embedded:
        note(
            f"{len(out.kept_embedded)} task(s) not in the current data kept their embedded "
            f"definition: {', '.join(out.kept_embedded)}"
        )
    print(
        f"{len(out.after)} simulation(s) rescored on {env} (judge "
        f"{getattr(judge, 'name', 'judge')}): {len(out.changed)} changed; average reward "
        f"{_fmt(out.average(out.before))} -> {_fmt(out.average(list(out.after)))}"
    )
    if output is not None:
        try:
            write_json_atomic(output, mask_values(out.data, secrets))
        except OSError as exc:  # what only the write tells: a full disk, /proc, a size limit
            fail(f"cannot write {shown_path(output)}: {exc.strerror or exc}")
        note(f"wrote {output}")


def _unique_stem(stem: str, domains: list[str], used: set[str]) -> str:
    """`stem`, or `stem_2`, `stem_3`...: the first whose `<stem>.<domain>.json` files no
    earlier run of this export took (runs `x`, `x#2` and `x_2` would otherwise write over
    each other's files); the names taken are added to `used`."""
    candidate, n = stem, 1
    while any(f"{candidate}.{d}.json" in used for d in domains):
        n += 1
        candidate = f"{stem}_{n}"
    used.update(f"{candidate}.{d}.json" for d in domains)
    return candidate


def export_tau2(runs: list[Any], output: Path, data_dir: str | None) -> None:
    """Each τ³ run as one τ² results file per domain, in `output` (named
    `<run>.<domain>.json`, the run's name made safe and short as MT-bench names are).

    Every file is built and validated before the first is written: a record that cannot
    be exported, in any run or domain, leaves no file behind."""
    from tau_bench.analysis.mt_bench import bounded
    from tau_bench.task_ids import file_part
    from tau_bench.tau3.interchange.export import (
        ExportError,
        build_export,
        record_domain,
        write_export,
    )

    check_output(output, folder=True)
    built: list[tuple[str, Any]] = []
    used: set[str] = set()
    for run in runs:
        groups: dict[str, list[Any]] = {}
        for r in run.records:
            name = record_domain(r, run.env)
            if name is not None:
                groups.setdefault(name, []).append(r)
        if not groups:
            fail(f"{run.label}: not a τ³ run (--format tau2 exports runs of --env tau3/...)")
        stem = _unique_stem(bounded(file_part(run.label), run.label), list(groups), used)
        for name, records in groups.items():
            domain = _tau3_domain(f"tau3/{name}", data_dir)
            path = output / f"{stem}.{name}.json"
            try:
                done = build_export(
                    records,
                    domain.loaded,
                    path,
                    label=run.label,
                    num_trials=run.num_trials,
                    agent=run.agent_strategy,
                    model=run.model,
                    user_model=run.user_model,
                    seed=run.config.get("seed"),
                )
            except ExportError as exc:  # a damaged record, a task recorded twice
                fail(str(exc))
            built.append((run.label, done))
    if not built:
        fail("nothing to export")
    for label, done in built:
        try:
            write_export(done, label)
        except ExportError as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"cannot write {shown_path(done.path)}: {exc.strerror or exc}")
        extra = f", {done.skipped_errors} errored left out" if done.skipped_errors else ""
        note(f"{label}: wrote {done.path} ({done.simulations} simulations{extra})")
        for line in done.notes:
            note(f"{label}: {line}")
