"""Cross-version task identity: which τ-bench v1 task each τ³ airline/retail task comes from.

Why: τ² reordered airline's scenarios (only one keeps its index) and rewrote many of
both domains' tasks, so "task 12" names different scenarios in v1 and τ³. The mapping is
derived from the two data directories and shipped as data (`lineage/tau3-1.0.1.json`:
ids, scores and change counts only, no task text); this module recomputes it, so a test
checks that recomputing gives the shipped file.

Method (per domain, τ³ default split against v1's `test` split):

* signature of a task: its user (v1 `user_id`; τ³: the scenario names that id, or
  its name parts as "First Last"), its word set (v1 `instruction`; τ³ the scenario's instruction
  fields), and its action set (`name` + canonical JSON arguments; v1 `kwargs`,
  τ³ `evaluation_criteria.actions[].arguments`);
* score of a pair = 2 × same user + Jaccard(actions) + Jaccard(words);
* pairs are taken greedily by descending score (ties: lower v1 index first), each task
  at most once; a τ³ task whose best remaining pair does not share the user and has a
  word overlap under 0.3 is left unmatched (`v1_index` null).

Run `python -m tau_bench.tau3.lineage --v1-data DIR --tau3-data DIR -o FILE` to regenerate.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from tau_adapters.jsonsafe import printable
from tau_bench.data.errors import DataDirError
from tau_bench.data.files import damaged, read_json
from tau_bench.tau3.tasks import Task, load_tasks

__all__ = ["ActionDiff", "action_diff", "compute_lineage", "instruction_diff", "load_lineage"]

DOMAINS = ("airline", "retail")
V1_SPLIT = "test"
SHIPPED = "tau3-1.0.1.json"
_WORD = re.compile(r"[a-z0-9#_$]+(?:\.\d+)?")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _jaccard(a: set[Any], b: set[Any]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _sig(name: str, args: dict[str, Any]) -> str:
    return name + json.dumps(args, sort_keys=True)


def scenario_text(task: Task) -> str:
    """The τ³ user scenario's instruction fields, in a fixed order."""
    instr = (task.user_scenario or {}).get("instructions")
    if isinstance(instr, str):
        return instr
    if not isinstance(instr, dict):
        return ""
    keys = ("reason_for_call", "known_info", "unknown_info", "task_instructions")
    return "\n".join(str(instr[k]) for k in keys if instr.get(k))


def v1_tasks(v1_root: Path, domain: str) -> list[dict[str, Any]]:
    """v1's `test` tasks of `domain`; a missing or damaged file is a `DataDirError`."""
    path = Path(v1_root) / domain / "tasks" / f"{V1_SPLIT}.json"
    tasks = read_json(path)
    if not isinstance(tasks, list) or not all(isinstance(t, dict) for t in tasks):
        raise damaged(path, "is not a JSON array of task objects")
    return tasks


def _same_user(user_id: str, text: str) -> bool:
    """The scenario names the v1 user: by id, or by the id's name parts (`yusuf_rossi_9620`
    → "Yusuf Rossi", retail scenarios give name and zip only)."""
    if not user_id:
        return False
    if user_id in text:
        return True
    parts = user_id.rsplit("_", 1)[0].split("_")
    return " ".join(parts) in " ".join(_WORD.findall(text.lower()))


def _pair_score(t3: Task, text: str, v1: dict[str, Any]) -> tuple[float, bool, float, float]:
    same_user = _same_user(str(v1.get("user_id") or ""), text)
    acts3 = {_sig(a.name, a.arguments) for a in t3.expected_actions}
    acts1 = {_sig(a["name"], a.get("kwargs") or {}) for a in v1.get("actions") or []}
    actions = _jaccard(acts3, acts1)
    words = _jaccard(_words(text), _words(str(v1.get("instruction", ""))))
    return 2.0 * same_user + actions + words, same_user, actions, words


def compute_domain(v1_root: Path, tau3_root: Path, domain: str) -> list[dict[str, Any]]:
    """One entry per τ³ task (file order): its v1 index, the match scores, change counts."""
    t3 = load_tasks(tau3_root, domain)
    v1 = v1_tasks(v1_root, domain)
    texts = {t.id: scenario_text(t) for t in t3}
    pairs = []
    for t in t3:
        for j, v in enumerate(v1):
            score, user, actions, words = _pair_score(t, texts[t.id], v)
            pairs.append((-score, j, t.id, user, actions, words))
    pairs.sort(key=lambda p: (p[0], p[1], p[2]))
    chosen: dict[str, dict[str, Any]] = {}
    used: set[int] = set()
    for neg, j, tid, user, actions, words in pairs:
        if tid in chosen or j in used:
            continue
        if not user and words < 0.3:
            continue
        used.add(j)
        diff = action_diff(v1[j].get("actions") or [], next(t for t in t3 if t.id == tid))
        chosen[tid] = {
            "v1_index": j,
            "score": round(-neg, 4),
            "same_user": user,
            "action_overlap": round(actions, 4),
            "word_overlap": round(words, 4),
            "actions": {k: len(v) for k, v in diff.as_dict().items()},
        }
    out = []
    for t in t3:
        entry = chosen.get(t.id, {"v1_index": None})
        out.append({"tau3_id": t.id, **entry})
    return out


def compute_lineage(v1_root: Path, tau3_root: Path) -> dict[str, Any]:
    """The whole mapping, as shipped."""
    return {
        "suite": "tau3",
        "version": "1.0.1",
        "v1_split": V1_SPLIT,
        "method": "lineage.py: 2*same_user + Jaccard(actions) + Jaccard(words), greedy 1:1",
        "domains": {d: compute_domain(v1_root, tau3_root, d) for d in DOMAINS},
    }


@cache
def load_lineage() -> dict[str, Any]:
    """The shipped mapping."""
    text = resources.files("tau_bench.tau3").joinpath("lineage", SHIPPED).read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def lineage_entry(domain: str, tau3_id: str) -> dict[str, Any] | None:
    """The shipped entry of τ³ task `tau3_id` of `domain` (None: not an airline/retail id)."""
    for entry in load_lineage()["domains"].get(domain, []):
        if entry["tau3_id"] == str(tau3_id):
            return dict(entry)
    return None


@dataclass
class ActionDiff:
    """Expected actions of the v1 task vs the τ³ task, as `name(args)` texts."""

    added: list[str]
    removed: list[str]
    changed: list[tuple[str, str]]

    def as_dict(self) -> dict[str, list[Any]]:
        return {"added": self.added, "removed": self.removed, "changed": self.changed}


def action_diff(v1_actions: list[dict[str, Any]], task: Task) -> ActionDiff:
    """Removed (v1 only), added (τ³ only), changed (same tool, other arguments, paired in
    order)."""
    old = [_sig(a["name"], a.get("kwargs") or {}) for a in v1_actions]
    new = [_sig(a.name, a.arguments) for a in task.expected_actions]
    only_old = [s for s in old if s not in new]
    only_new = [s for s in new if s not in old]
    changed: list[tuple[str, str]] = []
    for s in list(only_old):
        name = s[: s.index("{")]
        match = next((n for n in only_new if n[: n.index("{")] == name), None)
        if match is not None:
            changed.append((s, match))
            only_old.remove(s)
            only_new.remove(match)
    return ActionDiff(added=only_new, removed=only_old, changed=changed)


def instruction_diff(v1_instruction: str, task: Task) -> dict[str, Any]:
    """Word-level summary of how the user's instruction changed (counts and examples)."""
    old, new = _words(v1_instruction), _words(scenario_text(task))
    return {
        "words_v1": len(old),
        "words_tau3": len(new),
        "overlap": round(_jaccard(old, new), 3),
        "new_words": sorted(new - old)[:15],
        "dropped_words": sorted(old - new)[:15],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Recompute the τ³ → v1 task mapping.")
    parser.add_argument("--v1-data", type=Path, required=True)
    parser.add_argument("--tau3-data", type=Path, required=True)
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        data = compute_lineage(args.v1_data, args.tau3_data)
        _write(args.output, json.dumps(data, indent=1) + "\n")
    except DataDirError as exc:
        print(f"error: {printable(str(exc))}", file=sys.stderr)
        return 2
    return 0


def _write(path: Path, text: str) -> None:
    """Write the mapping; an unwritable path is a `DataDirError` (one line, not a traceback)."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise DataDirError(f"cannot write {path}: {exc.strerror or exc}") from None


if __name__ == "__main__":
    raise SystemExit(main())
