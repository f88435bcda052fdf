"""Config files through the INSTALLED `tau`: a device, a FIFO or an oversize file named as
`tau run --config`, `tau eval --config` or `tau serve --agent-configs` is one error line
and exit 2, never memory without end (`/dev/zero`) nor a wait without end (a FIFO).

Run in a subprocess because that is where a user meets it; each child has a deadline
(`TIMEOUT`) and an address-space cap (`MEMORY_CAP`) so that a regression fails the test
instead of hanging it or filling the machine's memory.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tau_bench.config.layers import MAX_CONFIG_SIZE

from ...conftest import DATA_DIR

ROOT = Path(__file__).resolve().parents[3]
TAU = Path(sys.executable).parent / "tau"
TIMEOUT = 60  # seconds; the refusal answers in about two
MEMORY_CAP = 2 * 1024**3  # bytes of address space: ~40x what `tau` needs to refuse a file


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def _tau(args: list[str], state: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "TAU_BENCH_DATA": str(DATA_DIR),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "TAU_SERVE_STATE_DIR": str(state),
    }
    env.pop("TAU_SERVE_TOKEN", None)
    return subprocess.run(
        [str(TAU), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=TIMEOUT,
        preexec_fn=_capped,
    )


def _dev_zero(tmp: Path) -> Path:
    return Path("/dev/zero")


def _fifo(tmp: Path) -> Path:
    path = tmp / "config.fifo"
    os.mkfifo(path)
    return path


def _oversize(tmp: Path) -> Path:
    """Valid YAML (one comment) one byte past the cap: only the size can refuse it."""
    path = tmp / "big.yaml"
    path.write_bytes(b"#" + b"x" * MAX_CONFIG_SIZE)
    return path


FILES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "dev-zero": (_dev_zero, "is not a regular file"),
    "fifo": (_fifo, "is not a regular file"),
    "oversize": (_oversize, "is larger than 1 MiB"),
}
COMMANDS = {
    "run": ["run", "--config"],
    "eval": ["eval", "--config"],
    "serve": ["serve", "--no-auth", "--port", "0", "--agent-configs"],
}


@pytest.mark.parametrize("kind", FILES)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_config_that_is_not_a_small_regular_file_is_one_line_and_exit_2(
    tmp_path: Path, command: str, kind: str
) -> None:
    assert TAU.exists(), f"the console script is not installed at {TAU}"
    make, problem = FILES[kind]
    path = make(tmp_path)
    done = _tau([*COMMANDS[command], str(path)], tmp_path / "state")
    assert "Traceback" not in done.stderr
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert str(path) in errors[0] and problem in errors[0], errors[0]
