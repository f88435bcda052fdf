"""Throwaway plug-in distributions for tests: a package and a hand-made dist-info whose
entry_points.txt declares `tau_adapters` strategies and `tau_adapters.commands` commands,
in a directory that goes on PYTHONPATH (subprocess) or sys.path (in-process)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

TAU = str(Path(sys.executable).parent / "tau")

MODULES = {
    "__init__.py": "",
    "good.py": (
        "import os\n"
        "import typer\n"
        "app = typer.Typer(help='A plug-in command.')\n"
        "@app.command()\n"
        "def go() -> None:\n"
        "    print('PLUGIN GO')\n"
        "@app.command()\n"
        "def other() -> None:\n"
        "    print('PLUGIN OTHER')\n"
        "def build(options):\n"
        "    secrets = (options.get('api_key'), os.environ.get('EVIL_TOKEN'))\n"
        "    raise RuntimeError('boom in build %s %s \\x1b[31m' % secrets)\n"
    ),
    "raises.py": "raise RuntimeError('import failed on purpose \\x1b[2J')\n",
    "syntax.py": "def (:\n",
}


def make_plugin_site(root: Path, package: str, entry_points: str) -> Path:
    """`root/site` holding package `package` (the MODULES) and a distribution
    `evil-plugins` declaring `entry_points` (an entry_points.txt body)."""
    site = root / "site"
    pkg = site / package
    pkg.mkdir(parents=True)
    for name, text in MODULES.items():
        (pkg / name).write_text(text)
    info = site / "evil_plugins-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evil-plugins\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    return site


def tau(site: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed `tau` with `site` on PYTHONPATH."""
    environ = {**os.environ, "PYTHONPATH": str(site), **env}
    return subprocess.run(
        [TAU, *args], capture_output=True, text=True, timeout=120, env=environ, check=False
    )


def one_error_line(proc: subprocess.CompletedProcess[str], *words: str) -> str:
    """The single `error:` line of a failed command (exit 2, no traceback)."""
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for word in words:
        assert word in lines[0], proc.stderr
    assert "\x1b" not in lines[0]
    return lines[0]


def adapter_plugin(root: Path, name: str, source: str) -> Path:
    """`root` holding module `<name>_adapter` (`source`, dedented) and a distribution
    registering its `build` as the `tau_adapters` strategy `name`: put `root` on
    PYTHONPATH to run `tau run --agent-strategy NAME` with a test's own adapter."""
    module = f"{name.replace('-', '_')}_adapter"
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(f"[tau_adapters]\n{name} = {module}:build\n")
    return root
