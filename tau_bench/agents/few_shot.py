"""The few-shot agent: the tool-calling agent with example conversations in its prompt.

The examples ("displays") come from the dataset's `<data_dir>/<domain>/few_shot.jsonl`
or from `few_shot_displays_path`. Each episode gets `num_few_shots` of them (default
5), drawn with a generator seeded by the run seed, the task id and the trial, so a
rerun shows every episode the same examples whatever the scheduling order.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tau_adapters.protocol import AdapterConfigError, AgentAdapter, SessionContext
from tau_adapters.registry import AgentProvider
from tau_bench.agents import prompts
from tau_bench.agents.tool_calling import ToolCallingAgent, agent_config
from tau_bench.llm import LLMConfig
from tau_bench.llm.config import whole_option

DEFAULT_NUM_FEW_SHOTS = 5
FEW_SHOT_FILE = "few_shot.jsonl"


def load_displays(path: str | Path) -> list[str]:
    """The `messages_display` texts of a few-shot JSONL file (one object per line)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise AdapterConfigError(
            f"cannot read few-shot displays {path}: {exc.strerror or exc}"
        ) from None
    except UnicodeDecodeError:
        raise AdapterConfigError(f"{path}: not a text file (UTF-8)") from None
    displays = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AdapterConfigError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise AdapterConfigError(f"{path}:{number}: not valid JSON (nested too deep)") from None
        display = item.get("messages_display") if isinstance(item, dict) else None
        if not isinstance(display, str):
            raise AdapterConfigError(f"{path}:{number}: no 'messages_display' string")
        displays.append(display)
    if not displays:
        raise AdapterConfigError(f"{path}: no few-shot displays in the file")
    return displays


def few_shot_count(value: Any) -> int:
    """`num_few_shots` as given: a whole number, 0 or more (0: no examples, an ablation;
    more than the displays: all of them); `DEFAULT_NUM_FEW_SHOTS` when absent."""
    count = whole_option({"num_few_shots": value}, "num_few_shots", DEFAULT_NUM_FEW_SHOTS, low=0)
    assert count is not None  # the default is a number
    return count


def choose_displays(displays: list[str], n: int, seed: Any, task_id: Any, trial: int) -> list[str]:
    """`n` displays for one episode, the same for the same (seed, task, trial)."""
    rng = random.Random(f"{seed}|{task_id}|{trial}")
    return rng.sample(displays, min(n, len(displays)))


class FewShotAgent(ToolCallingAgent):
    """Tool calling with a per-episode sample of example conversations after the policy."""

    def __init__(self, config: LLMConfig, provider: FewShotProvider) -> None:
        super().__init__(config)
        self._provider = provider
        self.examples: list[str] = []

    def system_prompt(self, session: SessionContext) -> str:
        displays = self._provider.displays(session.domain)
        self.examples = choose_displays(
            displays,
            self._provider.num_examples,
            self._provider.seed,
            session.task_id,
            session.trial,
        )
        return prompts.few_shot_system_prompt(session.policy, self.examples)


class FewShotProvider:
    """Loads the displays once per domain and shares them between episodes."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.config = agent_config(options)
        self.num_examples = few_shot_count(options.get("num_few_shots"))
        self.seed = options.get("seed")
        self._explicit = options.get("few_shot_displays_path")
        self._data_dir = options.get("data_dir")
        self._cache: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        if self._explicit or options.get("env"):
            self.displays(str(options.get("env") or ""))  # fail fast on a bad path

    def path_for(self, domain: str) -> Path:
        if self._explicit:
            return Path(self._explicit).expanduser()
        if not domain:
            raise AdapterConfigError("few-shot agent: no domain to find few_shot.jsonl for")
        from tau_bench.data import resolve_data_dir

        return resolve_data_dir(self._data_dir) / domain / FEW_SHOT_FILE

    def displays(self, domain: str) -> list[str]:
        key = "" if self._explicit else domain
        with self._lock:
            if key not in self._cache:
                self._cache[key] = load_displays(self.path_for(domain))
            return self._cache[key]

    def new_adapter(self) -> AgentAdapter:
        return FewShotAgent(self.config, self)

    async def aclose(self) -> None:
        return None


def build(options: Mapping[str, Any]) -> AgentProvider:
    """Entry point `few-shot`: the tool-calling options plus few_shot_displays_path,
    data_dir, env and num_few_shots (default 5)."""
    return FewShotProvider(options)
