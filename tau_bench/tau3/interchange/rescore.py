"""`tau rescore FILE --env tau3/<domain>`: re-grade a τ² results file with the τ³ evaluator.

Like `tau2 evaluate-trajs --fresh-tasks`: the file's embedded task definitions are
replaced by the current ones (matched by id; a task no longer in the data keeps its
embedded definition and is reported), then every simulation is evaluated again (all
components, the NL judge given) and its `reward_info` replaced. Everything else in the
file is written back as read. An evaluation that raises (a replay mismatch, a judge
failure) stops the rescore with one line saying what (the mismatch's call, returned and
expected content on that line): a judge problem never becomes a reward. A file is read
only up to `MAX_FILE_SIZE` (a sparse or endless file is refused, never a MemoryError);
this tool's own run log (`tau-adapters-run/1`) is recognised and the export that makes
a τ² file of it named.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tau_adapters.redaction import truncate
from tau_bench.data.files import MAX_FILE_SIZE, FileTooLarge, read_capped
from tau_bench.json_decode import loads
from tau_bench.results_log import LOG_FORMAT
from tau_bench.tau3.domain import LoadedDomain
from tau_bench.tau3.evaluator import evaluate
from tau_bench.tau3.interchange.schema import Results
from tau_bench.tau3.judge import NLJudge
from tau_bench.tau3.messages import Message, messages_from_dicts
from tau_bench.tau3.tasks import Task, load_tasks

__all__ = ["Rescored", "Tau2FileError", "read_results", "rescore_results", "trajectory_of"]


class Tau2FileError(ValueError):
    """The file is not a τ² results file this domain can rescore; the message says why."""


@dataclass
class Rescored:
    """The rescored file's data and what changed."""

    data: dict[str, Any]
    changed: list[tuple[str, int | None, float | None, float]] = field(default_factory=list)
    kept_embedded: list[str] = field(default_factory=list)
    before: list[float | None] = field(default_factory=list)
    after: list[float] = field(default_factory=list)

    def average(self, values: list[float | None]) -> float | None:
        scored = [v for v in values if v is not None]
        return sum(scored) / len(scored) if scored else None


MAX_MESSAGE_CHARS = 2000
"""Longest error detail kept on the one line (a replay mismatch quotes tool results)."""


def read_results(path: Path) -> tuple[dict[str, Any], Results]:
    """The raw data and its validated model; `Tau2FileError` for anything else."""
    raw = _read_capped(path)
    try:
        data = loads(raw)
    except ValueError as exc:  # JSONTooDeepError too: never a RecursionError
        problem = _run_log_problem(path, _first_line(raw))
        raise Tau2FileError(problem or f"{path} is not JSON: {exc}") from None
    if not isinstance(data, dict) or "simulations" not in data or "info" not in data:
        raise Tau2FileError(
            _run_log_problem(path, data)  # a log of no episode: its header alone
            or f"{path} is not a τ² results file (no info/tasks/simulations); "
            "for τ-bench v1 results use a v1 --env"
        )
    try:
        return data, Results.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "".join(f"{p}: " for p in [".".join(str(p) for p in first["loc"])] if p)
        msg = str(first["msg"]).removeprefix("Value error, ")
        raise Tau2FileError(f"{path} is not a valid τ² results file: {where}{msg}") from None


def _read_capped(path: Path) -> bytes:
    """The file's bytes, at most `MAX_FILE_SIZE` (`read_capped`; a τ² results file of a
    full run is far smaller)."""
    try:
        return read_capped(path)
    except FileTooLarge:
        raise _too_large(path) from None
    except OSError as exc:
        raise Tau2FileError(f"cannot read {path}: {exc.strerror or exc}") from None


def _too_large(path: Path) -> Tau2FileError:
    cap = MAX_FILE_SIZE // (1024 * 1024)
    return Tau2FileError(f"{path} is larger than {cap} MiB: not a τ² results file")


def _first_line(raw: bytes) -> Any:
    """The first line of `raw` decoded (None when it is not JSON): a run log's header."""
    end = raw.find(b"\n")
    try:
        return loads(raw if end < 0 else raw[:end])
    except ValueError:
        return None


def _run_log_problem(path: Path, header: Any) -> str | None:
    """What to do when the file is one of our own run logs (`header`, its first line, a
    `tau-adapters-run/1` header) rather than a τ² results file; None otherwise."""
    if not isinstance(header, dict) or header.get("format") != LOG_FORMAT:
        return None
    return (
        f"{path} is a tau run results log, not a τ² results file: export it first with "
        f"`tau export {path} --format tau2 -o DIR`, then rescore DIR/<run>.<domain>.json"
    )


def one_line(text: str) -> str:
    """`text` (a multi-line error: a replay mismatch's call, returned and expected
    contents) on one line, its whitespace runs as single spaces, cut to
    `MAX_MESSAGE_CHARS`; control characters are escaped where it is printed."""
    return truncate(" ".join(text.split()), MAX_MESSAGE_CHARS)


def trajectory_of(messages: list[dict[str, Any]]) -> list[Message]:
    """A simulation's messages as the evaluator reads them (multi-tool messages split)."""
    flat: list[dict[str, Any]] = []
    for m in messages:
        if m.get("role") == "tool" and "tool_messages" in m:
            flat.extend(m["tool_messages"])
        else:
            flat.append(m)
    return messages_from_dicts(flat)


def _solo(info: dict[str, Any]) -> bool:
    agent = (info.get("agent_info") or {}).get("implementation")
    user = (info.get("user_info") or {}).get("implementation")
    return agent == "llm_agent_solo" and user == "dummy_user"


def rescore_results(
    data: dict[str, Any], model: Results, domain: LoadedDomain, judge: NLJudge | None
) -> Rescored:
    """`data` with its tasks refreshed and every simulation's `reward_info` recomputed."""
    file_domain = model.info.environment_info.domain_name
    if file_domain != domain.name:
        raise Tau2FileError(
            f"the file's simulations are on τ³ domain {file_domain!r}, not {domain.name!r}: "
            f"pass --env tau3/{file_domain}"
        )
    fresh = {t.id: t for t in load_tasks(domain.root, domain.name, None)}
    out = dict(data)
    tasks: list[dict[str, Any]] = []
    kept: list[str] = []
    for raw in data["tasks"]:
        tid = str(raw["id"])
        if tid in fresh:
            tasks.append(fresh[tid].raw)
        else:
            tasks.append(raw)
            kept.append(tid)
    out["tasks"] = tasks
    by_id = {str(t["id"]): Task.from_dict(t) for t in tasks}
    result = Rescored(data=out, kept_embedded=kept)
    solo = _solo(data["info"])
    sims = []
    for raw_sim, sim in zip(data["simulations"], model.simulations, strict=True):
        task = by_id.get(sim.task_id) or (
            Task.from_dict(fresh[sim.task_id].raw) if sim.task_id in fresh else None
        )
        if task is None:
            raise Tau2FileError(f"simulation {sim.id}: task {sim.task_id!r} is in no task list")
        trajectory = trajectory_of(raw_sim.get("messages") or [])
        try:
            ev = evaluate(
                domain, task, trajectory, sim.termination_reason, judge=judge, solo_mode=solo
            )
        except Exception as exc:
            raise Tau2FileError(
                f"simulation {sim.id} (task {sim.task_id}): cannot evaluate: "
                f"{type(exc).__name__}: {one_line(str(exc))}"
            ) from None
        old = sim.reward_info.reward if sim.reward_info is not None else None
        result.before.append(old)
        result.after.append(ev.reward)
        if old != ev.reward:
            result.changed.append((sim.task_id, sim.trial, old, ev.reward))
        sims.append({**raw_sim, "reward_info": ev.to_dict()})
    out["simulations"] = sims
    Results.model_validate(out)  # what we write is still the upstream shape
    return result
