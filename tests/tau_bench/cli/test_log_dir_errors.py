"""A `--log-dir` (or run name) the file system cannot hold is one `error:` line naming
`--log-dir` and the reason, exit 2, nothing written: `Path.exists` raised ENAMETOOLONG
(File name too long) while the run's file names were chosen, a 53-line traceback.

Through the installed `tau` in a subprocess, where users meet it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA_DIR

TAU = Path(sys.executable).parent / "tau"
ENV = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
RUN = ["run", "--env", "airline", "--agent-strategy", "oracle", "--user-strategy", "scripted"]
RUN += ["--task-ids", "13", "--quiet"]
LONG_NAME = "d" * 300  # over NAME_MAX (255 on every common file system)
NESTED = "/".join(["abcdefghijklmnopqrstuvwxyz" * 2] * 90)  # under NAME_MAX, over PATH_MAX


def tau(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TAU), *map(str, args)],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=cwd,
        check=False,
        timeout=120,
    )


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 2, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-3000:]
    assert len(lines[0]) < 1000  # the path is cut short, however long
    return lines[0]


def written(tmp_path: Path, *ignore: str) -> list[Path]:
    return [p for p in tmp_path.rglob("*") if p.name not in ignore]


@pytest.mark.parametrize(
    "log_dir",
    [f"made/{LONG_NAME}", f"missing/{LONG_NAME}", f"made/{NESTED}", f"missing/{NESTED}"],
    ids=["long-name", "long-name-new-parent", "long-path", "long-path-new-parent"],
)
def test_tau_run_refuses_a_log_dir_too_long_in_one_line(tmp_path: Path, log_dir: str) -> None:
    (tmp_path / "made").mkdir()
    line = one_error_line(tau(*RUN, "--log-dir", tmp_path / log_dir))
    assert "--log-dir" in line and "File name too long" in line
    assert written(tmp_path) == [tmp_path / "made"]


def test_a_relative_log_dir_too_long_is_refused_too(tmp_path: Path) -> None:
    line = one_error_line(tau(*RUN, "--log-dir", f"results/{LONG_NAME}", cwd=tmp_path))
    assert "--log-dir results/ddd" in line and "File name too long" in line
    assert written(tmp_path) == []


def test_file_names_made_too_long_by_the_run_name_are_refused(tmp_path: Path) -> None:
    """The default run name holds the model's name: a long one makes the files' names
    too long, in a `--log-dir` that is fine."""
    done = tau(*RUN, "--model", "m" * 300, "--log-dir", tmp_path / "out")
    line = one_error_line(done)
    assert "--log-dir" in line and "File name too long" in line and "run's name" in line
    assert written(tmp_path) == []


def test_a_resume_path_too_long_is_one_line(tmp_path: Path) -> None:
    line = one_error_line(tau("run", "--resume", tmp_path / f"{LONG_NAME}.json"))
    assert "cannot resume" in line and "File name too long" in line


def eval_config(tmp_path: Path, **more: str) -> Path:
    """A one-task eval of the offline agent and user, as a file (JSON is YAML)."""
    config = tmp_path / "eval.yaml"
    data = {"name": "ev", "env": "airline", "agent-strategy": "oracle"}
    data |= {"user-strategy": "scripted", "user-models": "a/one", "task-ids": "13", **more}
    config.write_text(json.dumps(data))
    return config


@pytest.mark.parametrize("log_dir", [LONG_NAME, NESTED], ids=["long-name", "long-path"])
def test_tau_eval_refuses_a_log_dir_too_long_in_one_line(tmp_path: Path, log_dir: str) -> None:
    config = eval_config(tmp_path)
    line = one_error_line(
        tau("eval", "--config", config, "--quiet", "--log-dir", tmp_path / log_dir)
    )
    assert "--log-dir" in line and "File name too long" in line
    assert written(tmp_path) == [config]


def test_tau_eval_refuses_an_output_name_too_long_in_one_line(tmp_path: Path) -> None:
    config = eval_config(tmp_path, **{"log-dir": str(tmp_path / "runs")})
    line = one_error_line(tau("eval", "--config", config, "--output", tmp_path / LONG_NAME))
    assert line.startswith("error: --output ") and line.endswith("File name too long")
    assert written(tmp_path) == [config]
