"""A run's log -> what clients download: MT-bench scores, one trajectory, the HTML report.

Everything is derived from the runner's JSONL log (the source of truth), so the files
a finished run serves are the ones `tau export` and `tau report` would make of it, and a
run in progress serves what has finished so far. The MT-bench scores are the text
`tau_bench.analysis.mt_bench.scores_text` gives `tau export` too, rather than a
re-implementation here, so the two can never disagree.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from tau_bench.records import EpisodeRecord
from tau_bench.results_log import LogFileError, read_log
from tau_bench.task_ids import sort_key


class NoResults(LookupError):
    """The run has nothing to show yet (no log, or no finished episode)."""


class UnreadableLog(RuntimeError):
    """The run's log exists but cannot be read, or lost episodes it recorded (lines the
    reader refuses): an error to show, never an empty answer. The message names no
    server path."""


def _without_paths(text: str, log_path: str | Path) -> str:
    path = Path(log_path)
    for shown, name in ((str(path), "the run's log"), (str(path.parent), "the run's folder")):
        text = text.replace(shown, name)
    return text


def task_key(task_id: int | str) -> str:
    """A task id as text, normalised (`" 7"` -> `"7"`, `"retail/07"` -> `"retail/7"`):
    multi-domain runs name tasks `domain/N`, single-domain runs by index."""
    text = str(task_id).strip()
    name, sep, index = text.rpartition("/")
    if sep and index.isdigit():
        return f"{name.strip()}/{int(index)}"
    return str(int(text)) if text.isdigit() else text


def _order(record: EpisodeRecord) -> tuple[tuple[str, int, int, str], int]:
    return (sort_key(record.task_id), record.trial)


def ordered(found: Iterable[EpisodeRecord]) -> list[EpisodeRecord]:
    """Records by task (indices, then `domain/N` ids), then trial."""
    return sorted(found, key=_order)


def records(log_path: str | Path | None, expected: int | None = None) -> list[EpisodeRecord]:
    """Latest record per (task, trial) of a run's log, by task then trial. UnreadableLog
    when the log cannot be read, or, for a finished run (`expected`: the episodes it is
    known to have finished), has unreadable lines and fewer readable episodes than that
    (at least one). A line torn by a crash, since re-run by a resume, is no loss."""
    if not log_path or not Path(log_path).exists():
        return []
    try:
        contents = read_log(Path(log_path))
    except LogFileError as exc:
        raise UnreadableLog(_without_paths(str(exc), log_path)) from None
    found = len(contents.records)
    if expected is not None and contents.bad_lines and found < max(expected, 1):
        raise UnreadableLog(
            f"the run's log has {contents.bad_lines} line(s) the reader refuses (not JSON, "
            f"or a number that is not finite); {found} of its episode(s) are readable"
            + (f", of {expected} finished" if expected else "")
        )
    return ordered(contents.records.values())


def scores_jsonl(found: list[EpisodeRecord]) -> str:
    """The MT-bench `<model>_scores.jsonl` of `found` (one line per episode)."""
    from tau_bench.analysis.mt_bench import scores_text

    return scores_text(found)


def trajectory_jsonl(found: list[EpisodeRecord], task_id: int | str, trial: int) -> str:
    """The MT-bench trajectory file of one episode: `{"role", "content"}` per line."""
    from tau_bench.analysis.mt_bench import chat_lines

    wanted = task_key(task_id)
    for record in found:
        if task_key(record.task_id) == wanted and record.trial == trial:
            return "".join(
                json.dumps(line, ensure_ascii=False) + "\n" for line in chat_lines(record.messages)
            )
    raise NoResults(f"no finished episode for task {task_id}, trial {trial}")


def report_html(log_path: str | Path | None, title: str, expected: int | None = None) -> str:
    """`tau report` of the run's log: one self-contained HTML page."""
    from tau_bench.analysis.compare import compare_runs
    from tau_bench.analysis.loading import ResultsLoadError, load_run
    from tau_bench.analysis.report import render_report

    if not records(log_path, expected):
        raise NoResults("the run has no finished episode yet")
    try:
        run = load_run(Path(str(log_path)))
    except ResultsLoadError as exc:
        raise UnreadableLog(_without_paths(str(exc), str(log_path))) from None
    return render_report(compare_runs([run]), [run], title)
