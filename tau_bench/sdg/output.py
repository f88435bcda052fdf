"""Where generated tasks go: a JSONL tasks file (one task per line, flushed per task,
readable by `tau_bench.tasks.load_tasks`), an optional JSONL of rejected samples, and a
`<name>.runs.jsonl` sidecar with one summary line per `tau sdg generate` run (what
`tau sdg stats` reads for the validation rate)."""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from tau_adapters.redaction import environment_secrets, mask_values, secret_values
from tau_bench.output_files import same_file


def run_secrets(llm_options: dict[str, Any] | None = None) -> list[str]:
    """What generated files must never hold: the secret environment values (the API keys
    litellm sends) and the secret-looking settings of the model call (an `api_key`)."""
    return sorted({*environment_secrets(), *secret_values(llm_options or {})})


def runs_path(output_file: Path) -> Path:
    return output_file.with_suffix(".runs.jsonl")


class JsonlWriter:
    """Appends one JSON object per line and flushes it, so a crash loses at most a line.
    Every occurrence of one of `secrets` in a record's strings is masked first (a model
    may echo the API key it was sent into a scenario or an instruction)."""

    def __init__(self, path: Path | None, secrets: Iterable[str | None] = ()) -> None:
        self.path = path
        self.secrets = [s for s in secrets if s]
        self._fh: IO[str] | None = None

    def __enter__(self) -> JsonlWriter:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("a", encoding="utf-8")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def write(self, record: dict[str, Any]) -> None:
        if self._fh is None:
            return
        record = mask_values(record, self.secrets)
        self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._fh.flush()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSONL file; lines that are not JSON objects (not UTF-8 text, not
    JSON, too deep to decode, another JSON value) are skipped."""
    return [v for v in read_jsonl_lines(path) if isinstance(v, dict)]


def read_jsonl_lines(path: Path) -> list[Any]:
    """The value of every non-blank line of a JSONL file (none when it does not exist),
    None for a line that is not JSON (or not UTF-8 text)."""
    if not path.is_file():
        return []
    out: list[Any] = []
    with path.open("rb") as fh:
        for raw in fh:
            if not raw.strip():
                continue
            try:
                out.append(json.loads(raw.decode("utf-8")))
            except (UnicodeDecodeError, ValueError, RecursionError):
                out.append(None)
    return out


def text_file_problem(path: Path) -> str | None:
    """Why `path`, when it exists, cannot be appended to as a JSONL file (a directory,
    unreadable, not UTF-8 text: most likely not the file meant), or None."""
    if not path.exists():
        return None
    if not path.is_file():
        return f"{path} is not a file"
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                decoder.decode(chunk)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return f"{path} is not UTF-8 text, so not a JSONL file to append to"
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror or exc}"
    return None


def output_files_problem(
    output_file: Path,
    rejected_file: Path | None,
    names: tuple[str, str] = ("output_file", "rejected_file"),
) -> str | None:
    """Why a generation run must not start with these files, or None: the rejected samples
    would be written into the tasks file or its runs sidecar, or a file to append to is not
    JSONL text. Checked before any model call (`generate` and `tau sdg generate`, which
    names the files by their flags)."""
    output_name, rejected_name = names
    if rejected_file is not None:
        for other, what in (
            (output_file, f"the {output_name}"),
            (runs_path(output_file), f"the {output_name}'s runs sidecar"),
        ):
            if same_file(rejected_file, other):
                return (
                    f"{rejected_name} {rejected_file} is {what}: "
                    "give the rejected samples a file of their own"
                )
    for name, path in ((output_name, output_file), (rejected_name, rejected_file)):
        problem = text_file_problem(path) if path is not None else None
        if problem:
            return f"{name}: {problem}"
    return None


def next_sample_index(paths: list[Path | None], env: str, difficulty: str, seed: int) -> int:
    """First sample index not used yet by a run with the same env, difficulty and seed,
    so that generating again into the same file adds new samples instead of repeats."""
    used = -1
    for path in paths:
        if path is None:
            continue
        for record in read_jsonl(path):
            prov = record.get("provenance")
            if (
                isinstance(prov, dict)
                and prov.get("env") == env
                and prov.get("difficulty") == difficulty
                and prov.get("seed") == seed
                and isinstance(prov.get("sample_index"), int)
                and not isinstance(prov.get("sample_index"), bool)
            ):
                used = max(used, prov["sample_index"])
    return used + 1
