"""Fixtures for the τ³ suite tests: the shared data, plus a root with fixture prompts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tau_bench.tau3.conftest import require_data

FIXTURE_PROMPTS = {
    "agent_instruction": "FIXTURE AGENT INSTRUCTION",
    "agent_system_prompt": "<i>\n{agent_instruction}\n</i>\n<p>\n{domain_policy}\n</p>",
    "user_system_prompt": "{global_user_sim_guidelines_with_persona}\n\n<s>\n{instructions}\n</s>",
    "nl_judge_system_prompt": 'FIXTURE JUDGE: answer {"results": [...]}',
    "nl_judge_user_prompt": "conversation:\n{trajectory_str}\nexpectedOutcomes:\n{nl_assertions}",
}


@pytest.fixture(scope="session")
def data_root() -> Path:
    return require_data()


@pytest.fixture
def prompt_root(tmp_path: Path, data_root: Path) -> Path:
    """A τ³ data root like a pulled cache: the shared data plus (fixture) prompts."""
    root = tmp_path / "tau3"
    root.mkdir()
    for child in data_root.iterdir():
        (root / child.name).symlink_to(child)
    (root / "prompts").mkdir()
    for name, text in FIXTURE_PROMPTS.items():
        (root / "prompts" / f"{name}.txt").write_text(text, encoding="utf-8")
    return root


from tests.tau_bench.agents.fake_llm import fake_llm, llm_env  # noqa: E402

__all__ = ["fake_llm", "llm_env"]
