"""The τ³ user simulator: the original's guidelines and scenario, its stop tokens.

System prompt = the original's template (extracted at `tau data pull` time) filled with
the guideline file `data/tau2/user_simulator/simulation_guidelines.md` (no persona
guidelines at run time: the placeholder is emptied) and the task's scenario as the
original renders it (`Tau3Task.instruction`). The model answers the agent's greeting
first; roles are flipped as in the original. `###STOP###`, `###TRANSFER###` and
`###OUT-OF-SCOPE###` end the conversation (`user_stop`). User tools (telecom) are the
telecom issue's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tau_adapters.protocol import AdapterConfigError, UserSimulator
from tau_bench.data.errors import DataDirError
from tau_bench.llm import LLMConfig
from tau_bench.tau3.data import prompt_text, resolve_tau3_data_dir
from tau_bench.users.llm_users import LLMUser

__all__ = ["STOP_TOKENS", "Tau3User", "build_tau3_user", "tau3_user_system_prompt"]

STOP_TOKENS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")
GUIDELINES = Path("data/tau2/user_simulator/simulation_guidelines.md")
DEFAULT_MODEL = "gpt-4.1-2025-04-14"


def tau3_user_system_prompt(root: Path, scenario: str, guidelines: str = "") -> str:
    """The original's user system prompt for `scenario` (rendered persona + instructions)."""
    template = prompt_text(root, "user_system_prompt")
    text = guidelines or (Path(root) / GUIDELINES).read_text(encoding="utf-8")
    return template.replace(
        "{global_user_sim_guidelines_with_persona}", text.replace("<PERSONA_GUIDELINES>", "")
    ).replace("{instructions}", scenario)


class Tau3User(LLMUser):
    """One model call per turn, with the τ³ prompt and stop tokens."""

    stop_tokens = STOP_TOKENS

    def __init__(self, config: LLMConfig, root: Path) -> None:
        super().__init__(config)
        self.root = root

    def system_prompt(self, instruction: str) -> str:
        return tau3_user_system_prompt(self.root, instruction)


def build_tau3_user(**options: Any) -> UserSimulator:
    """`--user-strategy tau3`: options as the other LLM users (`model` default gpt-4.1)."""
    from tau_bench.users.llm_users import _config

    opts = dict(options)
    opts.setdefault("model", DEFAULT_MODEL)
    try:
        root = resolve_tau3_data_dir(opts.get("data_dir"))
        prompt_text(root, "user_system_prompt")
    except DataDirError as exc:
        raise AdapterConfigError(str(exc)) from None
    return Tau3User(_config(opts), root)
