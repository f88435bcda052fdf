"""litellm's own log stays quiet: every failure it logs also reaches the harness as an
exception, reported once in one line. Before, a Vertex model without usable credentials
printed litellm's ERROR log with a 25-line traceback ahead of the pre-flight's line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import DATA_DIR

TAU = Path(sys.executable).parent / "tau"


def run_with_bad_google_credentials(
    tmp_path: Path, **extra: str
) -> subprocess.CompletedProcess[str]:
    credentials = tmp_path / "sa.json"
    credentials.write_text('{"type": "service_account"}')  # no key, no client_email
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOG"}
    env.update(
        TAU_BENCH_DATA=str(DATA_DIR),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        GOOGLE_APPLICATION_CREDENTIALS=str(credentials),
        NO_GCE_CHECK="True",
        HOME=str(tmp_path),
        CLOUDSDK_CONFIG=str(tmp_path / "gcloud"),
        **extra,
    )
    return subprocess.run(
        [
            str(TAU), "run", "--env", "retail", "--model", "vertex_ai/gemini-2.5-flash",
            "--user-strategy", "scripted", "--task-ids", "0", "--log-dir", str(tmp_path / "out"),
        ],
        capture_output=True, text=True, env=env, check=False, timeout=120,
    )  # fmt: skip


def test_a_provider_failure_is_the_pre_flight_s_lines_only(tmp_path: Path) -> None:
    done = run_with_bad_google_credentials(tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("error: pre-flight failed"), done.stderr[-2000:]
    assert len(lines) == 2, done.stderr[-2000:]
    assert "vertex_ai/gemini-2.5-flash" in lines[1] and "client_email" in lines[1]
    assert "Traceback" not in done.stderr and "LiteLLM:ERROR" not in done.stderr


def test_litellm_log_set_by_the_user_is_kept(tmp_path: Path) -> None:
    done = run_with_bad_google_credentials(tmp_path, LITELLM_LOG="ERROR")
    assert done.returncode == 2
    assert "LiteLLM:ERROR" in done.stderr
