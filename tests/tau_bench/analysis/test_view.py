"""`tau view`: the installed console script, piped (filters, one episode expanded) and
on a terminal (the prompt loop, driven through a pty)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from tau_bench.analysis.reasons import db_diff_summary, failure_reason
from tau_bench.records import EpisodeRecord
from tests.tau_bench.analysis.conftest import HISTORICAL, Runs

TAU = Path(sys.executable).parent / "tau"
ENV = {**os.environ, "COLUMNS": "200", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _tau(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TAU), "view", *map(str, args)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def with_error(runs: Runs, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sloppy run's log, with task 1 trial 1 re-recorded as errored (last line wins)."""
    lines = runs.sloppy.read_text().splitlines()
    episode = json.loads(next(line for line in lines if '"task_id": 1' in line))
    episode.update(
        trial=1,
        reward=None,
        reward_info=None,
        messages=[],
        error={
            "source": "agent",
            "kind": "timeout",
            "message": "no reply in 60s",
            "retryable": True,
        },
    )
    path = tmp_path_factory.mktemp("view") / "errored.jsonl"
    path.write_text("\n".join([*lines, json.dumps(episode)]) + "\n")
    return path


def test_list_filters_and_reasons(with_error: Path) -> None:
    proc = _tau(with_error)
    assert proc.returncode == 0, proc.stderr
    assert "10 of 10 episodes" in proc.stdout
    order = [line.split("│")[2:4] for line in proc.stdout.splitlines() if line.startswith("│")]
    assert [(int(t), int(k)) for t, k in order][:3] == [(0, 0), (0, 1), (1, 0)]  # by task
    failed = _tau(with_error, "--failed")
    rows = [line for line in failed.stdout.splitlines() if " fail " in line]
    assert rows and all("DB differs in" in row for row in rows), failed.stdout
    assert " error " not in failed.stdout and " pass " not in failed.stdout
    errored = _tau(with_error, "--errored")
    (row,) = [line for line in errored.stdout.splitlines() if line.startswith("│ 1 ")]
    assert " error " in row and "agent_unavailable: timeout (agent): no reply in 60s" in row
    assert "no trajectory recorded" in errored.stdout  # the one errored episode, expanded
    assert "expected actions" not in errored.stdout
    # a list is never expanded unless it is one episode
    assert "trajectory (" not in failed.stdout


def test_one_episode_expanded_with_trajectory_and_db_diff(runs: Runs) -> None:
    proc = _tau(runs.sloppy, "--failed", "--task", "2", "--trial", "0")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "1 of 10 episodes (failed, task 2, trial 0)" in out
    assert "why: DB differs in 3 field(s): reservations/BOH180.flights[0].price" in out
    assert "instruction" in out and "omar_davis_3817" in out
    assert "→ update_reservation_flights(" in out and "tool update_reservation_flights:" in out
    assert "DB difference (" in out and "expected actions" in out
    assert "<script>alert(1)</script>" in out  # printed as text, not eaten as markup
    assert "(6" in out and "chars; --system shows it)" in out  # the policy is clipped


def test_an_episode_whose_cost_is_not_recorded_shows_it_unknown() -> None:
    """A τ-bench results file records no agent cost: the episode's cost is unknown, as in
    the tables, not the user's cost alone as if it were the whole."""
    out = _tau(HISTORICAL, "--task", "3", "--trial", "0").stdout
    head = next(line for line in out.splitlines() if " · task 3 · trial 0 · " in line)
    assert head.endswith(" · unknown"), head


def test_episode_costs_in_a_run_of_ours_are_dollars(runs: Runs) -> None:
    out = _tau(runs.sloppy, "--task", "2", "--trial", "0").stdout
    head = next(line for line in out.splitlines() if " · task 2 · trial 0 · " in line)
    assert re.search(r" · \$0\.0\d{3}", head), head


def test_nothing_matches_and_bad_input(runs: Runs, tmp_path: Path) -> None:
    none = _tau(runs.oracle, "--failed")
    assert none.returncode == 1 and "no episode matches (failed)" in none.stdout
    bad = _tau(runs.oracle, "--task", "4-1")
    assert bad.returncode == 2
    assert bad.stderr.splitlines() == ["error: --task: task range '4-1' ends before it starts"]
    missing = _tau(tmp_path / "nope\x1b[2J.jsonl")
    assert missing.returncode == 2 and missing.stderr.startswith("error: no such results file")
    assert "nope\\x1b[2J.jsonl" in missing.stderr  # a file name is shown, never obeyed
    assert "Traceback" not in missing.stderr + bad.stderr


def _drive(args: list[str], keys: bytes) -> str:
    """Run `tau view` on a pseudo-terminal, type `keys`, return everything it printed."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [str(TAU), "view", *args], stdin=follower, stdout=follower, stderr=follower, env=ENV
    )
    os.close(follower)
    os.write(leader, keys)
    out = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError(f"tau view did not finish: {out[-2000:]!r}")
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the program exited and closed the terminal
            break
        if not chunk:
            break
        out += chunk
    assert proc.wait(timeout=60) == 0
    os.close(leader)
    return ANSI.sub("", out.decode("utf-8", "replace"))


def test_interactive_prompt_opens_an_episode_and_changes_filters(runs: Runs) -> None:
    out = _drive([str(runs.sloppy)], b"f\n1\na\nt 13\nq\n")
    assert "episode # to open" in out
    assert "10 of 10 episodes" in out  # the first list
    assert "(failed)" in out  # the list after `f`
    assert "why: DB differs in" in out and "trajectory (" in out  # episode 1 of the failed
    assert "sloppy (task 13)" in out  # `a` cleared the filters, `t 13` narrowed them


def test_reason_lines() -> None:
    diffs = [
        {"table": "reservations", "record": "HATHAT", "path": "status"},
        {"table": "users", "record": "mia", "path": None},
        {"table": "users", "record": "bob", "path": "x"},
    ]
    assert db_diff_summary(diffs) == (
        "DB differs in 3 field(s): reservations/HATHAT.status, users/mia (whole record), …"
    )
    missed = EpisodeRecord(
        task_id=1,
        trial=0,
        reward=0.0,
        reward_info={"r_actions": 1, "outputs": {"327": False, "1000": True}},
        stop_reason="max_steps",
    )
    assert failure_reason(missed) == "outputs not said: 327; cut off at max steps"
    assert failure_reason(EpisodeRecord(task_id=1, trial=0, reward=1.0)) == ""


TELECOM_ID = "[mobile_data_issue]user_abroad_roaming_enabled_off[PERSONA:None]"


@pytest.fixture(scope="module")
def bracketed(runs: Runs, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sloppy log with a run name that reads like a rich closing tag, task 0 renamed
    to a τ³ telecom id, and a bot message that reads like markup and holds escape
    sequences (clear the screen, write the clipboard)."""
    out = []
    for line in runs.sloppy.read_text().splitlines():
        episode = json.loads(line)
        if "run_name" in episode:
            episode["run_name"] = "[/red]run"
        if episode.get("task_id") == 0:
            episode["task_id"] = TELECOM_ID  # as in an original τ³ results file
        if episode.get("task_id") == 2:
            said = "[/bold] [red]hi[/red] \x1b[2J\x1b]52;c;aGk=\x07 \x9b31m"
            episode["messages"].append({"role": "assistant", "content": said})
        out.append(json.dumps(episode))
    path = tmp_path_factory.mktemp("view") / "bracketed.jsonl"
    path.write_text("\n".join(out) + "\n")
    return path


def test_text_that_looks_like_rich_markup_is_printed_as_it_is(bracketed: Path) -> None:
    """Task ids, labels and agents' words are data: none is taken for a style or a tag,
    and the terminal is shown their control characters, never made to obey them."""
    listed = _tau(bracketed)
    assert listed.returncode == 0, listed.stderr
    assert "[/red]run" in listed.stdout and TELECOM_ID in listed.stdout
    opened = _tau(bracketed, "--task", "2", "--trial", "0")
    assert opened.returncode == 0, opened.stderr
    assert "[/bold] [red]hi[/red] ␛[2J␛]52;c;aGk= �31m" in opened.stdout
    assert not any(c in listed.stdout + opened.stdout for c in "\x1b\x07\x9b")
    typed = _drive([str(bracketed)], b"[/x]\nq\n")
    assert "? '[/x]': a number from 1 to 10" in typed
