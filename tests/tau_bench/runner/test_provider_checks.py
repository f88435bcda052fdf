"""What a third-party adapter's builder hands the runner is checked before any episode:
not a provider, `secrets` that would mask nothing, a builder that crashes; secrets the
adapter marks on its options are masked like secret-named ones; a provider whose close
hangs does not keep the results from being written."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from tau_adapters import registry
from tau_adapters.protocol import AgentTurn, SessionContext
from tau_adapters.registry import SimpleProvider
from tau_bench.config import RunConfig, RunConfigError
from tau_bench.runner import Runner, core, prepare_run
from tests.conftest import DATA_DIR

SECRET = "zzCREDVALUEzz4321"


class Echo:
    """Says the value it was configured with, then ends."""

    def __init__(self, said: str) -> None:
        self.said = said

    async def start(self, session: SessionContext) -> None:
        pass

    async def send(self, turn: Any) -> AgentTurn:
        return AgentTurn(messages=[f"key={self.said}"], end_conversation=True)

    async def close(self) -> None:
        pass


class Provider(SimpleProvider):
    def __init__(self, said: str, secrets: Any = None) -> None:
        super().__init__(lambda: Echo(said))
        if secrets is not None:
            self.secrets = secrets


class HangingClose(Provider):
    async def aclose(self) -> None:
        await asyncio.Event().wait()


class Options(BaseModel):
    model_config = ConfigDict(extra="ignore")
    credential: str | None = Field(default=None, json_schema_extra={"secret": True})


@pytest.fixture
def register() -> Iterator[Any]:
    names: list[str] = []

    def _register(name: str, builder: Any) -> str:
        registry.register(name, builder)
        names.append(name)
        return name

    yield _register
    for name in names:
        registry._extra.pop(name, None)


def _config(tmp_path: Path, strategy: str, **kw: Any) -> RunConfig:
    return RunConfig(
        env="airline",
        agent_strategy=strategy,
        user_strategy="scripted",
        task_ids=[13],
        log_dir=str(tmp_path),
        data_dir=str(DATA_DIR),
        run_name="t",
        quiet=True,
        **kw,
    )


def _run(config: RunConfig) -> Any:
    return asyncio.run(Runner(prepare_run(config)).run())


def _refused(config: RunConfig) -> str:
    with pytest.raises(RunConfigError) as info:
        _run(config)
    return str(info.value)


def test_a_builder_that_returns_no_provider_is_one_line(tmp_path: Path, register: Any) -> None:
    name = register("returns-none", lambda options: None)
    message = _refused(_config(tmp_path, name))
    assert "its builder returned NoneType, not a provider" in message
    assert not list(tmp_path.glob("*.jsonl"))  # refused before any file


def test_a_builder_that_crashes_is_one_line_with_the_secrets_masked(
    tmp_path: Path, register: Any
) -> None:
    def build(options: Any) -> Any:
        raise RuntimeError(f"boom in build {options['api_key']}")

    name = register("crashes", build)
    message = _refused(_config(tmp_path, name, agent_options={"api_key": SECRET}))
    assert "RuntimeError: boom in build" in message and "\n" not in message
    assert SECRET not in message


@pytest.mark.parametrize(
    "secrets",
    [(s for s in [SECRET]), iter([SECRET]), 12345],
    ids=["generator", "iterator", "number"],
)
def test_secrets_that_would_mask_nothing_are_refused(
    tmp_path: Path, register: Any, secrets: Any
) -> None:
    name = register(f"bad-secrets-{type(secrets).__name__}", lambda o: Provider(SECRET, secrets))
    assert "its `secrets` is a" in _refused(_config(tmp_path, name))


def _log_text(tmp_path: Path) -> str:
    [log] = tmp_path.glob("*.jsonl")
    return log.read_text() + "".join(p.read_text() for p in tmp_path.glob("*.json"))


def test_secrets_given_as_one_string_mask_that_string(tmp_path: Path, register: Any) -> None:
    name = register("str-secrets", lambda options: Provider(SECRET, SECRET))
    outcome = _run(_config(tmp_path, name))
    assert outcome.summary["episodes_done"] == 1
    text = _log_text(tmp_path)
    assert SECRET not in text and "key=***" in text


def test_an_option_the_adapter_marks_secret_is_masked_whatever_its_name(
    tmp_path: Path, register: Any
) -> None:
    def build(options: Any) -> Any:
        return Provider(options["credential"])

    build.options_model = Options  # type: ignore[attr-defined]
    name = register("marked-secret", build)
    _run(_config(tmp_path, name, agent_options={"credential": SECRET}))
    text = _log_text(tmp_path)
    assert SECRET not in text  # header, summary, results and the echoed message
    assert "key=***" in text
    header = json.loads(text.splitlines()[0])
    assert header["config"]["agent_options"]["credential"].startswith("<redacted sha256:")


def test_a_provider_whose_close_hangs_still_gets_its_results_written(
    tmp_path: Path, register: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(core, "ACLOSE_DEADLINE", 0.05)
    name = register("hanging-close", lambda options: HangingClose("hello"))
    outcome = _run(_config(tmp_path, name))
    assert outcome.summary["episodes_done"] == 1
    assert outcome.summary["agent_close_error"] == ("the agent provider did not close within 0 s")
    assert Path(outcome.plan.summary_path).exists() and Path(outcome.plan.results_path).exists()
