"""`tau ces` commands: through typer's CliRunner and once as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from adapters.ces.harness.cli import app
from tau_bench.cli.errors import UserError

from ...conftest import DATA_DIR
from .conftest import APP, ThreadedEmulator

ROOT = Path(__file__).resolve().parents[3]


def test_provision_dry_run_then_real_then_idempotent() -> None:
    runner = CliRunner()
    with ThreadedEmulator(env="retail", auto_apps=False) as emu:
        base = [
            "provision",
            "--env",
            "retail",
            "--app-id",
            APP,
            "--emulator",
            emu.address,
            "--data-dir",
            str(DATA_DIR),
        ]
        dry = runner.invoke(app, [*base, "--dry-run"])
        assert dry.exit_code == 0, dry.output
        plan = json.loads(dry.stdout)
        assert plan["dry_run"] and plan["changes"][0]["action"] == "create_app"
        assert not emu.store.apps
        real = runner.invoke(app, base)
        assert real.exit_code == 0 and APP in emu.store.apps
        again = runner.invoke(app, base)
        assert again.exit_code == 0 and "changed 0" in again.stderr
        check = runner.invoke(app, ["check", "--app-id", APP, "--emulator", emu.address])
        assert check.exit_code == 0, check.output
        assert "get_order_details" in json.loads(check.stdout)["client_functions"].values()


def test_bad_input_is_a_user_error() -> None:
    result = CliRunner().invoke(app, ["check", "--app-id", "bad/app", "--emulator", "x:1"])
    assert isinstance(result.exception, UserError)
    assert str(result.exception).startswith("ces: app_id: bad app id")


def test_subprocess_dry_run() -> None:
    with ThreadedEmulator(env="airline", auto_apps=False) as emu:
        env = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "CES_EMULATOR_HOST": emu.address}
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                "from adapters.ces.harness.cli import app; app()",
                "provision",
                "--env",
                "airline",
                "--app-id",
                APP,
                "--dry-run",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["changes"][-1]["action"] == "update_app"
    assert "would change" in proc.stderr
