"""`tau tasks show tau3/<domain>/<id>`: the task's τ-bench v1 counterpart and what changed.

Reads the shipped cross-version mapping (`tau_bench.tau3.lineage`) and, for the diff,
the v1 task from the v1 data directory (`TAU_BENCH_DATA` / `--data-dir` of v1).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["parse_show_id", "print_v1_counterpart"]


def parse_show_id(task_id: str, env: str | None) -> tuple[str, str]:
    """(env, id): `tau3/airline/12` → (`tau3/airline`, `12`); `12` with `--env X` → (X, 12).
    ValueError when neither names the env."""
    if "/" in task_id:
        prefix, _, tid = task_id.rpartition("/")
        if env is not None and env != prefix:
            raise ValueError(f"task {task_id} is not in --env {env}")
        return prefix, tid
    if env is None:
        raise ValueError("pass --env, or name the task as ENV/ID (e.g. tau3/airline/12)")
    return env, task_id


def _call(name: str, args: dict[str, Any]) -> str:
    return f"{name}({json.dumps(args, ensure_ascii=False)})"


def print_v1_counterpart(console: Any, env: str, task: Any) -> None:
    """The v1 task this τ³ task comes from, the instruction and action changes."""
    from rich.text import Text

    from tau_bench.suites import load_domain
    from tau_bench.tau3.lineage import action_diff, instruction_diff, lineage_entry

    domain = env.split("/", 1)[1]
    entry = lineage_entry(domain, task.id)
    if entry is None:
        return
    console.print(Text.assemble("\n", ("τ-bench v1 counterpart", "bold")))
    if entry["v1_index"] is None:
        console.print("  none: no v1 test task matches this scenario")
        return
    index = entry["v1_index"]
    same = " (same index)" if str(index) == str(task.id) else ""
    console.print(
        f"  {domain}/{index} in v1's test split{same}; match score {entry['score']} "
        f"(same user {entry['same_user']}, action overlap {entry['action_overlap']}, "
        f"word overlap {entry['word_overlap']})",
    )
    try:
        v1 = load_domain(domain).tasks("test")[index]
    except Exception as exc:  # the v1 data is optional for this view
        console.print(f"  (v1 data not available for the diff: {exc})")
        return
    words = instruction_diff(v1.instruction, task.task)
    console.print(
        f"  instruction: {words['words_v1']} → {words['words_tau3']} distinct words, "
        f"overlap {words['overlap']}; new: {', '.join(words['new_words']) or '-'}; "
        f"dropped: {', '.join(words['dropped_words']) or '-'}",
    )
    diff = action_diff([{"name": a.name, "kwargs": a.kwargs} for a in v1.actions], task.task)
    console.print(
        f"  actions: {len(diff.added)} added, {len(diff.removed)} removed, "
        f"{len(diff.changed)} changed",
    )
    for sig in diff.added:
        console.print(f"    + {sig}")
    for sig in diff.removed:
        console.print(f"    - {sig}")
    for old, new in diff.changed:
        console.print(f"    ~ {old}\n      → {new}")
