"""few-shot: the tool-calling agent with seeded example conversations in its prompt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau_adapters.protocol import AdapterConfigError, SessionContext, UserTurn
from tau_adapters.registry import build_provider
from tau_bench.agents.few_shot import FewShotAgent, load_displays
from tau_bench.episode import run_task
from tau_bench.users import build_user
from tests.conftest import DATA_DIR
from tests.tau_bench.agents.fake_llm import FakeLLM, Reply, Request
from tests.tau_bench.agents.scenarios import TASK_ID, Task13


def _examples_in(system: str, displays: list[str]) -> list[int]:
    return [i for i, d in enumerate(displays) if d.strip() in system]


async def test_episode_task13_with_dataset_examples(
    fake_llm: FakeLLM, airline, data_dir: Path
) -> None:
    brain = Task13()
    fake_llm.brain = brain
    provider = build_provider(
        "few-shot",
        {
            "model": "gemini/gemini-2.5-flash",
            "env": "airline",
            "data_dir": str(data_dir),
            "seed": 10,
        },
    )
    user = build_user("llm", model="gemini/gemini-2.5-flash")
    episode = await run_task(
        airline, airline.tasks()[TASK_ID], TASK_ID, provider.new_adapter(), user
    )

    assert episode.result.error is None, episode.result.error
    assert episode.reward_value == 1.0
    assert [a.name for a in episode.env.actions][-1] == "transfer_to_human_agents"
    displays = load_displays(data_dir / "airline" / "few_shot.jsonl")
    agent_requests = [r for r in fake_llm.requests if r.tools]
    shown = _examples_in(agent_requests[0].system, displays)
    assert len(shown) == 5
    assert agent_requests[0].system.startswith(airline.policy)
    # The same episode in another run shows the same examples.
    again = build_provider("few-shot", {"model": "m", "env": "airline", "seed": 10}).new_adapter()
    assert isinstance(again, FewShotAgent)
    prompt = again.system_prompt(SessionContext("x", "airline", [], policy="P", task_id=TASK_ID))
    assert _examples_in(prompt, displays) == shown


def test_examples_depend_on_seed_task_and_trial(airline, data_dir: Path) -> None:
    provider = build_provider("few-shot", {"model": "m", "env": "airline", "num_few_shots": 3})
    displays = load_displays(data_dir / "airline" / "few_shot.jsonl")

    def shown(task_id: int, trial: int, seed: int | None = None) -> tuple[int, ...]:
        p = provider
        if seed is not None:
            p = build_provider(
                "few-shot", {"model": "m", "env": "airline", "num_few_shots": 3, "seed": seed}
            )
        agent = p.new_adapter()
        assert isinstance(agent, FewShotAgent)
        session = SessionContext("x", "airline", [], policy="P", task_id=task_id, trial=trial)
        return tuple(_examples_in(agent.system_prompt(session), displays))

    assert len(shown(1, 0)) == 3
    assert shown(1, 0) == shown(1, 0)
    samples = {shown(t, trial) for t in range(6) for trial in range(2)}
    assert len(samples) > 1
    assert {shown(1, 0, seed) for seed in range(6)} != {shown(1, 0)}


async def test_explicit_displays_path(fake_llm: FakeLLM, tmp_path: Path) -> None:
    path = tmp_path / "shots.jsonl"
    lines = [{"messages_display": f"user: example number {i}\nassistant: ok"} for i in range(3)]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")

    def brain(request: Request) -> Reply:
        count = request.system.count("user: example number")
        return Reply(text=f"I was shown {count} examples.")

    fake_llm.brain = brain
    agent = build_provider(
        "few-shot",
        {"model": "openai/gpt-4o", "few_shot_displays_path": str(path), "num_few_shots": 10},
    ).new_adapter()
    await agent.start(SessionContext("s", "retail", [], policy="POLICY"))
    turn = await agent.send(UserTurn("hi"))
    assert turn.text == "I was shown 3 examples."


@pytest.mark.parametrize("content", [None, "", "not json\n", '{"other": 1}\n'])
def test_bad_displays_fail_at_build(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "shots.jsonl"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(AdapterConfigError, match=r"shots\.jsonl"):
        build_provider("few-shot", {"model": "m", "few_shot_displays_path": str(path)})


DEEP_LINE = '{"messages_display": ' + "[" * 5000 + "]" * 5000 + "}\n"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            ('{"messages_display": "ok"}\n' + DEEP_LINE).encode(),
            r"shots\.jsonl:2: .*nested too deep",
        ),
        (b'{"messages_display": "\xff"}\n', r"shots\.jsonl: not a text file \(UTF-8\)"),
    ],
)
def test_a_deep_or_binary_displays_file_is_one_config_error(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "shots.jsonl"
    path.write_bytes(content)
    with pytest.raises(AdapterConfigError, match=message):
        build_provider("few-shot", {"model": "m", "few_shot_displays_path": str(path)})


def test_tau_run_with_a_deep_displays_file_says_one_line(tmp_path: Path) -> None:
    path = tmp_path / "shots.jsonl"
    path.write_text(DEEP_LINE, encoding="utf-8")
    tau = Path(sys.executable).parent / "tau"
    proc = subprocess.run(
        [
            str(tau), "run", "--env", "airline", "--agent-strategy", "few-shot",
            "--model", "gpt-4o", "--model-provider", "openai",
            "--few-shot-displays-path", str(path), "--user-strategy", "scripted",
            "--task-ids", "1", "--log-dir", str(tmp_path / "logs"), "--data-dir", str(DATA_DIR),
        ],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: agent strategy 'few-shot': {path}:1: not valid JSON (nested too deep)"
    ]


@pytest.mark.parametrize("zero", [0, "0"])
def test_zero_examples_means_none_not_the_default(airline, zero: object) -> None:
    """An ablation asks for 0 (a YAML config's `num_few_shots: 0`): it used to get the
    default 5 (`0 or 5`)."""
    agent = build_provider(
        "few-shot", {"model": "m", "env": "airline", "num_few_shots": zero}
    ).new_adapter()
    assert isinstance(agent, FewShotAgent)
    agent.system_prompt(SessionContext("x", "airline", [], policy="P", task_id=TASK_ID))
    assert agent.examples == []


@pytest.mark.parametrize("value", ["-3", -1, "2.5", 2.5, "many", True])
def test_a_count_that_is_no_whole_number_from_0_is_refused(airline, value: object) -> None:
    with pytest.raises(AdapterConfigError) as raised:
        build_provider("few-shot", {"model": "m", "env": "airline", "num_few_shots": value})
    assert str(raised.value) == (
        f"option 'num_few_shots' must be a whole number, 0 or more, got {value!r}"
    )
