"""Run Python in a subprocess where some installed packages look uninstalled.

A meta-path finder placed first refuses the named modules (and their submodules), exactly
as a missing extra would, without touching the shared virtualenv.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Every module an extra brings, i.e. what a core-only install lacks.
ALL_EXTRA_MODULES = (
    "google.cloud.dialogflowcx_v3beta1",
    "google.cloud.ces",
    "grpc",
    "fastapi",
    "starlette",
    "uvicorn",
    "mcp",
    "mcp_types",
    "gymnasium",
    "matplotlib",
    "a2a",
    "ray",
)

_PRELUDE = """
import sys

_HIDDEN = {hidden!r}


class _Hide:
    def find_spec(self, name, path=None, target=None):
        if any(name == h or name.startswith(h + ".") for h in _HIDDEN):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _Hide())
"""


def run_hidden(
    code: str, hidden: Iterable[str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run `code` with `hidden` modules made unimportable; stdout/stderr captured as text."""
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(
        [sys.executable, "-c", _PRELUDE.format(hidden=tuple(hidden)) + "\n" + code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=timeout,
        check=False,
    )
