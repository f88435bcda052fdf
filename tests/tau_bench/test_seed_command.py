"""τ-bench's seed command, verbatim, through `python run.py` in a subprocess.

`--user_model gemini-1.5-pro` used to fall back to OpenAI ("LLM Provider NOT provided")
in every episode. Now the retired id is refused before any episode with current ids
named, and a current id goes to Vertex AI with the agent's Google project and the
Application Default Credentials: google.auth's token exchange reaches our loopback
endpoint, signed with the key made here, and pre-flight names the Vertex route.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from tests.tau_bench.llm.google_fakes import TokenServer, make_key_file

ROOT = Path(__file__).resolve().parents[2]
SEED = shlex.split(
    "--env retail --agent_strategy decibel --agent_id agent-1 --project_id proj "
    "--start_index 0 --end_index -1 --user_model gemini-1.5-pro"
)


def run_py(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "GOOGLE_CLOUD_PROJECT")
    }
    return subprocess.run(
        [sys.executable, str(ROOT / "run.py"), *args],
        cwd=cwd,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_seed_command_verbatim_names_the_retired_model(tmp_path: Path) -> None:
    done = run_py(SEED, tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "gemini-1.5-pro is retired" in lines[0] and "gemini-2.5-pro" in lines[0]
    assert "openai" not in done.stderr.lower() and "Traceback" not in done.stderr
    assert not (tmp_path / "results").exists()  # before any episode or file


def test_the_seed_command_with_a_current_model_goes_to_vertex(tmp_path: Path) -> None:
    argv = [w if w != "gemini-1.5-pro" else "gemini-2.5-pro" for w in SEED]
    with TokenServer() as server:
        key_file, server.public_pem = make_key_file(tmp_path, server.url)
        done = run_py(argv, tmp_path, GOOGLE_APPLICATION_CREDENTIALS=str(key_file))
    # No network here: the Vertex call itself fails, after a real signed token exchange.
    assert done.returncode == 2, done.stderr
    assert "pre-flight failed" in done.stderr and "Traceback" not in done.stderr
    assert "user model gemini-2.5-pro (Vertex AI, project proj, us-central1)" in done.stderr
    assert server.claims and server.claims[0]["iss"] == "tester@proj.iam.gserviceaccount.com"
    assert not (tmp_path / "results").exists()
