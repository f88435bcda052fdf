"""Optional dependencies: one readable line instead of a ModuleNotFoundError traceback.

The core install (SDK, benchmark, CLI) has no gRPC, web server, MCP, gymnasium or
plotting library; those come with the package's extras. Code that needs one calls
`require(extra)` before importing it, so a user who lacks the extra reads which one to
install:

    require("dialogflow")   # -> MissingExtraError: this needs the optional dependencies
                            #    'dialogflow': pip install 'tau-adapters[dialogflow]'
"""

from __future__ import annotations

import importlib

__all__ = ["EXTRA_MODULES", "MissingExtraError", "extra_for", "require"]

#: The importable modules each extra of pyproject.toml provides (checked by
#: tests/packaging against pyproject.toml, so the two cannot drift apart).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "dialogflow": ("google.cloud.dialogflowcx_v3beta1", "grpc"),
    "http": ("fastapi", "uvicorn", "mcp"),
    "service": ("fastapi", "uvicorn"),
    "gym": ("gymnasium",),
    "report": ("matplotlib",),
    "a2a": ("a2a", "uvicorn"),
    "ces": ("google.cloud.ces", "grpc"),
    "ray": ("ray",),
}


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra to install.

    A subclass of ImportError, so code that already falls back on ImportError keeps working.
    """

    def __init__(self, extra: str, module: str) -> None:
        self.extra = extra
        super().__init__(
            f"this needs the optional dependencies '{extra}': pip install 'tau-adapters[{extra}]'",
            name=module,
        )


def extra_for(module: str | None) -> str | None:
    """The extra that provides `module` (or a package above it), if any."""
    if not module:
        return None
    for extra, names in EXTRA_MODULES.items():
        for name in names:
            if module == name or module.startswith(name + ".") or name.startswith(module + "."):
                return extra
    return None


def require(extra: str, *modules: str) -> None:
    """Import `modules` (default: those of `extra`), or raise MissingExtraError naming `extra`.

    Importing (rather than only looking the modules up) also catches an extra installed
    half-way, e.g. a package whose own dependency is missing.
    """
    names = modules or EXTRA_MODULES.get(extra)
    if not names:
        raise ValueError(f"unknown extra {extra!r}: known are {', '.join(sorted(EXTRA_MODULES))}")
    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            raise MissingExtraError(extra, exc.name or name) from None
