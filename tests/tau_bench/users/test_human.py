"""The human user: typed lines (a monkeypatched `input`) drive a real episode."""

from __future__ import annotations

import builtins
import io

import pytest
from rich.console import Console

from tau_adapters.protocol import STOP_TOKEN
from tau_bench.agents.oracle import OracleAgent
from tau_bench.episode import run_task
from tau_bench.users import build_user
from tau_bench.users.human import HumanUser, InputEnded
from tau_bench.users.prompts import GREETING

TASK_ID = 13


def _typing(monkeypatch: pytest.MonkeyPatch, lines: list[str]) -> list[str]:
    prompts: list[str] = []
    queue = list(lines)

    def fake_input(prompt: str = "") -> str:
        prompts.append(prompt)
        if not queue:
            raise EOFError
        return queue.pop(0)

    monkeypatch.setattr(builtins, "input", fake_input)
    return prompts


async def test_human_drives_an_episode(monkeypatch: pytest.MonkeyPatch, airline) -> None:
    prompts = _typing(monkeypatch, ["  I want to change reservation XEWRD9  ", "yes", "/stop"])
    screen = io.StringIO()
    user = build_user("human", console=Console(file=screen, width=200))
    assert isinstance(user, HumanUser)
    task = airline.tasks()[TASK_ID]

    episode = await run_task(airline, task, TASK_ID, OracleAgent(), user)

    assert episode.result.messages[1] == {
        "role": "user",
        "content": "I want to change reservation XEWRD9",
    }
    assert episode.result.stop_reason == "terminate_tool"
    assert episode.reward_value == 1.0
    shown = screen.getvalue()
    assert task.instruction[:40] in shown and GREETING in shown
    assert prompts == ["you: "]
    assert user.usage.calls == 0


async def test_stop_words_and_end_of_input(monkeypatch: pytest.MonkeyPatch) -> None:
    _typing(monkeypatch, ["hello", "###STOP###", "/quit"])
    user = HumanUser(console=Console(file=io.StringIO()))
    assert await user.start("Be a customer.") == "hello"
    assert await user.reply("How can I help?") == STOP_TOKEN
    assert await user.reply("Still there?") == STOP_TOKEN
    with pytest.raises(InputEnded):  # no more input: not an answer, not a score of 0
        await user.reply("Hello?")
    screen = user.console.file.getvalue()  # type: ignore[attr-defined]
    assert "agent: Still there?" in screen


async def test_end_of_input_is_an_error_of_the_episode_not_a_zero(
    monkeypatch: pytest.MonkeyPatch, airline
) -> None:
    from tau_adapters.protocol import AgentTurn

    class AsksBack:
        async def start(self, session: object) -> None:
            return None

        async def send(self, turn: object) -> AgentTurn:
            return AgentTurn(messages=["Could you tell me more?"])

        async def close(self) -> None:
            return None

    _typing(monkeypatch, ["I want to change my reservation"])  # then the input ends
    user = HumanUser(console=Console(file=io.StringIO()))
    task = airline.tasks()[TASK_ID]
    episode = await run_task(airline, task, TASK_ID, AsksBack(), user)
    assert episode.result.error is not None and episode.result.error.source == "user"
    assert episode.reward is None


async def test_input_fn_option() -> None:
    seen: list[str] = []

    def reader(prompt: str) -> str:
        seen.append(prompt)
        return "typed"

    user = build_user("human", input_fn=reader, console=Console(file=io.StringIO()))
    assert await user.start("x") == "typed"
    assert seen == ["you: "]


async def test_an_agents_escape_sequences_are_shown_not_obeyed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The person's terminal is not the agent's: "[/x]" is not markup, ESC is not obeyed."""
    _typing(monkeypatch, ["/stop"])
    user = HumanUser()  # the default console, as `--user-strategy human` makes it
    assert await user.reply("[/x] done\x1b[2J\x1b]52;c;aGk=\x07") == STOP_TOKEN
    shown = capsys.readouterr().out
    assert "agent: [/x] done␛[2J␛]52;c;aGk=" in shown and "\x1b" not in shown
