"""`tau_adapters.extras`: a missing extra is one line naming the extra, never a traceback."""

from __future__ import annotations

import importlib.util
import sys
import tomllib

import pytest

from tau_adapters.extras import EXTRA_MODULES, MissingExtraError, require
from tests.packaging.hiding import ROOT, run_hidden

EXPECTED = (
    "this needs the optional dependencies 'dialogflow': pip install 'tau-adapters[dialogflow]'"
)


def test_message_names_the_extra_and_the_install_command() -> None:
    exc = MissingExtraError("dialogflow", "grpc")
    assert str(exc) == EXPECTED
    assert isinstance(exc, ImportError)
    assert exc.extra == "dialogflow"
    assert exc.name == "grpc"


def test_require_passes_when_the_modules_import() -> None:
    require("dialogflow", "json", "email.message")


def test_require_raises_for_a_module_that_is_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tau_no_such_dependency", None)
    with pytest.raises(MissingExtraError) as info:
        require("http", "json", "tau_no_such_dependency")
    assert str(info.value) == (
        "this needs the optional dependencies 'http': pip install 'tau-adapters[http]'"
    )
    assert info.value.name == "tau_no_such_dependency"
    # One line, no chained ModuleNotFoundError to print under it.
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_require_uses_the_extras_own_modules_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gymnasium", None)
    with pytest.raises(MissingExtraError, match=r"'gym': pip install 'tau-adapters\[gym\]'"):
        require("gym")


def test_unknown_extra_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown extra 'dialogfow'"):
        require("dialogfow")


def test_every_extra_of_pyproject_has_its_modules_listed() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert set(EXTRA_MODULES) == set(extras) - {"all"}


def test_every_listed_module_is_installed_in_the_development_environment() -> None:
    # `make setup` installs every extra, so each name here must be a real module (looked up,
    # not imported: importing ray, matplotlib and the Google clients takes ~10 s).
    missing = [
        f"{extra}: {name}"
        for extra, names in EXTRA_MODULES.items()
        for name in names
        if importlib.util.find_spec(name) is None
    ]
    assert not missing, f"EXTRA_MODULES names modules no extra installs: {missing}"


def test_hidden_module_in_a_real_package_gives_the_one_line_error() -> None:
    result = run_hidden(
        "from tau_adapters.extras import MissingExtraError\n"
        "try:\n"
        "    import tau_bench.gym\n"
        "except MissingExtraError as exc:\n"
        "    print(type(exc).__name__, exc)\n",
        hidden=["gymnasium"],
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "MissingExtraError this needs the optional dependencies 'gym': "
        "pip install 'tau-adapters[gym]'"
    )


def test_service_app_without_fastapi_names_the_service_extra() -> None:
    result = run_hidden("import tau_bench.service.api\n", hidden=["fastapi"])
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "tau_adapters.extras.MissingExtraError: this needs the optional dependencies "
        "'service': pip install 'tau-adapters[service]'"
    )
