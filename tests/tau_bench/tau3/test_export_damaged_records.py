"""`tau export --format tau2` on logs real runs write, and on damaged ones.

A tool call whose arguments are not a JSON object never ran (the environment answered it
with an error) and is left out of the τ² trajectory, its tool message too; NaN in a
call's arguments is written as the string "NaN", so the file is strict JSON that `tau
rescore` reads back. A record that cannot become a τ² simulation, or one (task, trial)
recorded twice, is one `error:` line naming the episode, exit 2, and no file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.tau_bench.tau3.tau3_runs import oracle_run, tau

Record = dict[str, Any]


@pytest.fixture(scope="module")
def run_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The log of an airline oracle run of task 5 (one scored episode)."""
    return oracle_run(tmp_path_factory.mktemp("run") / "runs", "tau3/airline", "5")


def _variant(run_log: Path, folder: Path, edit: Callable[[list[Record]], None]) -> Path:
    """A copy of the run log whose episode records `edit` changed."""
    header, *lines = run_log.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    edit(records)
    path = folder / "edited.jsonl"
    path.write_text("\n".join([header, *map(json.dumps, records)]) + "\n")
    return path


def _add_call(arguments: str, name: str = "get_user_details") -> Callable[[list[Record]], None]:
    """An assistant tool call (OpenAI shape: arguments as JSON text) and its tool message."""

    def edit(records: list[Record]) -> None:
        call = {"id": "q1", "type": "function", "function": {"name": name, "arguments": arguments}}
        records[0]["messages"] += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "q1", "name": name, "content": "Error: ..."},
        ]

    return edit


def _export(log: Path, out: Path) -> Any:
    return tau("export", log, "--format", "tau2", "-o", out, check=False)


def _simulation(out: Path) -> Record:
    (path,) = out.glob("*.airline.json")
    (sim,) = json.loads(path.read_text())["simulations"]
    return sim


@pytest.mark.parametrize(
    "arguments",
    [
        "[1, 2]",  # what a model sent: JSON, not an object
        '{"user_id": ' + "[" * 5000 + "]" * 5000 + "}",  # deeper than Python's decoder goes
        "not json",
    ],
    ids=["list", "too-deep", "not-json"],
)
def test_a_call_whose_arguments_are_not_an_object_is_left_out(
    run_log: Path, tmp_path: Path, arguments: str
) -> None:
    """Was: a pydantic ValidationError traceback (a list built into a ToolCall) or a
    RecursionError; "not json" was replayed as a call with no arguments."""
    plain = tmp_path / "plain"
    assert _export(run_log, plain).returncode == 0
    log = _variant(run_log, tmp_path, _add_call(arguments))
    out = tmp_path / "out"
    proc = _export(log, out)
    assert proc.returncode == 0, proc.stderr
    messages = _simulation(out)["messages"]
    assert messages == _simulation(plain)["messages"][: len(messages)]
    assert len(messages) == len(_simulation(plain)["messages"])
    assert "q1" not in json.dumps(messages)


def test_nan_in_arguments_is_written_as_a_string_and_rescores(
    run_log: Path, tmp_path: Path
) -> None:
    """Was: a bare NaN in the file - not JSON, and what our rescore calls damage."""
    log = _variant(run_log, tmp_path, _add_call('{"user_id": NaN, "limit": -Infinity}'))
    out = tmp_path / "out"
    proc = _export(log, out)
    assert proc.returncode == 0, proc.stderr
    (path,) = out.glob("*.airline.json")

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in the exported file")

    data = json.loads(path.read_text(), parse_constant=refuse)
    calls = [c for m in data["simulations"][0]["messages"] for c in m.get("tool_calls") or []]
    assert calls[-1]["arguments"] == {"user_id": "NaN", "limit": "-Infinity"}
    rescored = tau(
        "rescore", path, "--env", "tau3/airline", "--judge-model", "assume-met", check=False
    )
    assert rescored.returncode == 0, rescored.stderr
    assert "1 simulation(s) rescored" in rescored.stdout


def _set_requestor(records: list[Record]) -> None:
    records[0]["messages"].append(
        {
            "role": "user",
            "content": None,
            "tool_calls": [{"id": "u1", "name": "x", "arguments": {}, "requestor": "wizard"}],
        }
    )


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda rs: rs[0].update(task={}), "task 5 trial 0: id: Field required"),
        (lambda rs: rs[0]["task"].update(id=5), "task 5 trial 0: id: Input should be"),
        (_set_requestor, "task 5 trial 0: messages."),
        (lambda rs: rs[0].update(reward_info={"reward_info": "x"}), "task 5 trial 0: reward_info"),
        (
            lambda rs: rs.append({**rs[0], "task_id": 6}),  # a tasks file listing a task twice
            "task 6 trial 0: τ³ task '5' trial 0 is recorded twice (also as task 5)",
        ),
    ],
    ids=["task-empty", "task-int-id", "bad-requestor", "reward-info", "task-twice"],
)
def test_a_record_that_cannot_be_exported_is_one_line(
    run_log: Path, tmp_path: Path, edit: Callable[[list[Record]], None], expected: str
) -> None:
    """Was: a pydantic ValidationError traceback, exit 1."""
    log = _variant(run_log, tmp_path, edit)
    out = tmp_path / "out"
    proc = _export(log, out)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: ") and expected in line
    assert not list(out.glob("*.json"))


def test_a_bad_requestor_names_the_field(run_log: Path, tmp_path: Path) -> None:
    """The message's role picks the model it is checked against: the error names the
    requestor, not "role: Input should be 'system'" from another model of the union."""
    proc = _export(_variant(run_log, tmp_path, _set_requestor), tmp_path / "out")
    assert "participant.tool_calls.0.requestor: Input should be 'user' or 'assistant'" in (
        proc.stderr
    )


def test_a_damaged_record_after_a_good_run_leaves_no_file(run_log: Path, tmp_path: Path) -> None:
    """Several runs (or domains) in one export: every file is checked before the first is
    written, so a damaged record in the last one leaves no file of the others either."""
    damaged = _variant(run_log, tmp_path, lambda rs: rs[0].update(reward_info={"reward_info": "x"}))
    out = tmp_path / "out"
    proc = tau("export", run_log, damaged, "--format", "tau2", "-o", out, check=False)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: ") and "#2: task 5 trial 0: reward_info" in line, line
    assert not list(out.glob("*.json"))


def test_runs_whose_file_names_meet_get_distinct_files(run_log: Path, tmp_path: Path) -> None:
    """Runs `x`, `x` again (shown as `x#2`, a file name `x_2`) and `x_2`: each gets its own
    file; none is written over by a later one."""
    header, *lines = run_log.read_text().splitlines()
    name = json.loads(header)["run_name"]
    logs = []
    for folder, run_name in (("a", name), ("b", name), ("c", f"{name}_2")):
        (tmp_path / folder).mkdir()
        log = tmp_path / folder / "run.jsonl"
        log.write_text(
            "\n".join([json.dumps({**json.loads(header), "run_name": run_name}), *lines])
        )
        logs.append(log)
    out = tmp_path / "out"
    proc = tau("export", *logs, "--format", "tau2", "-o", out)
    written = sorted(p.name for p in out.glob("*.json"))
    assert written == sorted(
        [f"{name}.airline.json", f"{name}_2.airline.json", f"{name}_2_2.airline.json"]
    ), proc.stderr
    wrote = [line.split(" wrote ", 1)[1] for line in proc.stderr.splitlines() if " wrote " in line]
    assert len(wrote) == len(set(wrote)) == 3, proc.stderr
