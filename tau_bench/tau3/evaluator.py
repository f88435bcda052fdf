"""The τ³ evaluator (spec §6): reward of a trajectory, shaped like the original's RewardInfo.

`evaluate(domain, task, trajectory, termination_reason, judge=...)`:

* termination other than `agent_stop`/`user_stop` → reward 0.0, basis null, a note;
* ENV: a predicted environment replays the whole trajectory (strict by default); a gold
  environment applies the task's initial state and then calls every expected action
  directly — no sync step, exceptions swallowed; `db_match` compares both hashes; env
  assertions run on the predicted environment (their exceptions escape, as upstream);
* ACTION, COMMUNICATE always run; NL_ASSERTION only when in the basis, through `judge`;
* reward = product of the components in the task's `reward_basis`.

`Evaluation.to_dict()` matches `RewardInfo.model_dump(mode="json")` field by field;
`Evaluation.failures` is a readable list of what went wrong (DB diff, missing actions,
failed assertions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tau_bench.tau3.diff import db_diff
from tau_bench.tau3.domain import LoadedDomain
from tau_bench.tau3.environment import Environment
from tau_bench.tau3.judge import JudgeError, NLJudge
from tau_bench.tau3.messages import Message, ToolCall
from tau_bench.tau3.tasks import Task
from tau_bench.tau3.toolkit import Toolkit

__all__ = ["Evaluation", "evaluate", "gold_environment"]

ENV_BASES = {"DB", "ENV_ASSERTION"}
STOP_REASONS = {"agent_stop", "user_stop"}


@dataclass
class Evaluation:
    """One evaluation; fields as the original's RewardInfo, plus `failures`."""

    reward: float
    reward_basis: list[str] | None = None
    reward_breakdown: dict[str, float] | None = None
    db_check: dict[str, Any] | None = None
    env_assertions: list[dict[str, Any]] | None = None
    action_checks: list[dict[str, Any]] | None = None
    communicate_checks: list[dict[str, Any]] | None = None
    nl_assertions: list[dict[str, Any]] | None = None
    info: dict[str, Any] | None = None
    failures: list[str] = field(default_factory=list)
    gold_hashes: dict[str, str | None] | None = None
    predicted_hashes: dict[str, str | None] | None = None

    def to_dict(self) -> dict[str, Any]:
        """RewardInfo-shaped dict (without `failures` and hashes)."""
        return {
            "reward": self.reward,
            "db_check": self.db_check,
            "env_assertions": self.env_assertions,
            "action_checks": self.action_checks,
            "nl_assertions": self.nl_assertions,
            "communicate_checks": self.communicate_checks,
            "reward_basis": self.reward_basis,
            "reward_breakdown": self.reward_breakdown,
            "info": self.info,
        }

    def failure_report(self) -> str:
        return "\n".join(self.failures) if self.failures else "no failures"


def gold_environment(domain: LoadedDomain, task: Task) -> Environment:
    """The evaluator's gold environment: initial state + expected actions, no sync."""
    env = Environment(domain)
    _apply_initial_state(env, task, task.history())
    for action in task.expected_actions:
        try:
            env.make_tool_call(action.name, action.requestor, action.arguments)
        except Exception:
            pass  # the original logs and continues
    return env


def _apply_initial_state(
    env: Environment, task: Task, history: list[Message], strict: bool = True
) -> None:
    state = task.initial_state
    env.set_state(
        state.initialization_data if state is not None else None,
        state.initialization_actions if state is not None else None,
        history,
        strict=strict,
    )


def _env_component(
    domain: LoadedDomain,
    task: Task,
    trajectory: list[Message],
    solo: bool,
    strict: bool,
    live: Environment | None = None,
    gold_env: Environment | None = None,
) -> tuple[dict[str, Any], Evaluation, Environment | None, Environment | None]:
    crit = task.evaluation_criteria
    assert crit is not None
    if crit.actions is None and crit.env_assertions is None:
        ev = Evaluation(1.0, db_check={"db_match": True, "db_reward": 1.0})
        return {}, _with_note(ev, "No expected actions or env assertions"), None, None
    if live is not None:
        predicted = live
    else:
        predicted = Environment(domain, solo_mode=solo)
        _apply_initial_state(predicted, task, list(trajectory), strict)
    gold = gold_env if gold_env is not None else gold_environment(domain, task)
    gold_h = gold.hashes()
    pred_h = dict(gold_h) if gold is predicted else predicted.hashes()
    db_reward = 1.0 if gold_h == pred_h else 0.0
    checks = []
    assertion_reward = 1.0
    for assertion in crit.env_assertions or []:
        met = predicted.run_env_assertion(assertion)
        checks.append(
            {"env_assertion": assertion.model_dump(), "met": met, "reward": 1.0 if met else 0.0}
        )
        assertion_reward *= 1.0 if met else 0.0
    breakdown: dict[str, Any] = {}
    reward = 1.0
    if "DB" in crit.reward_basis:
        breakdown["DB"] = db_reward
        reward *= db_reward
    if "ENV_ASSERTION" in crit.reward_basis:
        breakdown["ENV_ASSERTION"] = assertion_reward
        reward *= assertion_reward
    ev = Evaluation(
        reward,
        db_check={"db_match": db_reward == 1.0, "db_reward": db_reward},
        env_assertions=checks,
        gold_hashes=gold_h,
        predicted_hashes=pred_h,
    )
    return breakdown, ev, predicted, gold


def _with_note(ev: Evaluation, note: str) -> Evaluation:
    ev.info = {"note": note}
    return ev


_TOOL_TYPES: dict[tuple[type[Toolkit], type[Toolkit] | None], dict[str, str]] = {}


def _tool_types(domain: LoadedDomain) -> dict[str, str]:
    """Tool name -> kind value; class-level facts, computed once per toolkit pair."""
    agent, user = domain.spec.agent_toolkit, domain.spec.user_toolkit
    types = _TOOL_TYPES.get((agent, user))
    if types is None:
        types = {n: agent.tool_kind(n).value for n in agent.tool_names()}
        if user is not None:
            types.update({n: user.tool_kind(n).value for n in user.tool_names()})
        _TOOL_TYPES[(agent, user)] = types
    return types


def _calls(trajectory: list[Message]) -> list[ToolCall]:
    return [c for m in trajectory if m.is_tool_call() for c in m.tool_calls or ()]


def _action_component(domain: LoadedDomain, task: Task, trajectory: list[Message]) -> Evaluation:
    actions = task.expected_actions
    if not actions:
        return _with_note(
            Evaluation(1.0, reward_breakdown={"ACTION": 1.0}), "No actions to evaluate"
        )
    calls = _calls(trajectory)
    types = _tool_types(domain)
    checks = []
    for action in actions:
        match = any(action.matches(c.name, c.arguments) for c in calls)
        checks.append(
            {
                "action": action.model_dump(),
                "action_match": match,
                "action_reward": 1.0 if match else 0.0,
                "tool_type": types.get(action.name),
            }
        )
    reward = 1.0 if all(c["action_match"] for c in checks) else 0.0
    return Evaluation(reward, reward_breakdown={"ACTION": reward}, action_checks=checks)


def _communicate_component(task: Task, trajectory: list[Message]) -> Evaluation:
    infos = task.evaluation_criteria.communicate_info if task.evaluation_criteria else None
    if not infos:
        ev = Evaluation(1.0, reward_breakdown={"COMMUNICATE": 1.0})
        return _with_note(ev, "No communicate_info to evaluate")
    texts = [m.content for m in trajectory if m.role == "assistant" and m.has_text()]
    checks = []
    for info in infos:
        needle = info.lower()
        found = next((t for t in texts if needle in (t or "").lower().replace(",", "")), None)
        if found is not None:
            why = f"Information '{info}' communicated in the message:\n '{found}'"
        else:
            why = f"Information '{info}' not communicated."
        checks.append({"info": info, "met": found is not None, "justification": why})
    reward = 1.0 if all(c["met"] for c in checks) else 0.0
    return Evaluation(reward, reward_breakdown={"COMMUNICATE": reward}, communicate_checks=checks)


def _nl_component(task: Task, trajectory: list[Message], judge: NLJudge | None) -> Evaluation:
    assertions = task.evaluation_criteria.nl_assertions if task.evaluation_criteria else None
    if not assertions:
        ev = Evaluation(1.0, reward_breakdown={"NL_ASSERTION": 1.0}, nl_assertions=[])
        return _with_note(ev, "No nl_assertions to evaluate")
    if judge is None:
        raise JudgeError(f"task {task.id} needs an NL judge (NL_ASSERTION in its reward basis)")
    try:
        checks = judge.judge(trajectory, list(assertions))
    except JudgeError:
        raise
    except Exception as exc:
        raise JudgeError(f"NL judge failed: {exc}") from exc
    reward = 1.0 if all(c.met for c in checks) else 0.0
    return Evaluation(
        reward,
        reward_breakdown={"NL_ASSERTION": reward},
        nl_assertions=[c.to_dict() for c in checks],
    )


def evaluate(
    domain: LoadedDomain,
    task: Task,
    trajectory: list[Message],
    termination_reason: str,
    *,
    judge: NLJudge | None = None,
    solo_mode: bool = False,
    strict_replay: bool = True,
    live_env: Environment | None = None,
    gold_env: Environment | None = None,
) -> Evaluation:
    """Score `trajectory` (which starts with the task's message history) for `task`.

    `live_env`: the environment that produced `trajectory` from the task's initial state,
    unused since (e.g. a ground-truth replay). It IS the state the predicted environment
    would reach by replaying the trajectory, so it is used as such instead of rebuilding
    it (a third of the evaluation's work; the strict replay check is then moot).

    `gold_env`: an environment known to be in exactly the state `gold_environment` would
    build (e.g. `live_env` itself when no post-call sync changed anything and no random id
    was drawn, see `replay_task`); used instead of building one.
    """
    if termination_reason not in STOP_REASONS:
        note = f"Simulation terminated prematurely. Termination reason: {termination_reason}"
        return Evaluation(0.0, info={"note": note}, failures=[note])
    crit = task.evaluation_criteria
    if crit is None:
        return Evaluation(1.0, info={"note": "No evaluation criteria"})
    env_breakdown, env_ev, predicted, gold = _env_component(
        domain, task, trajectory, solo_mode, strict_replay, live_env, gold_env
    )
    action_ev = _action_component(domain, task, trajectory)
    comm_ev = _communicate_component(task, trajectory)
    basis = set(crit.reward_basis)
    nl_ev = _nl_component(task, trajectory, judge) if "NL_ASSERTION" in basis else None
    unknown = basis - ENV_BASES - {"ACTION", "COMMUNICATE", "NL_ASSERTION"}
    if unknown:
        raise ValueError(f"Task reward_basis includes {unknown} but these were not evaluated.")
    reward = 1.0
    breakdown: dict[str, float] = {}
    if basis & ENV_BASES:
        breakdown.update(env_breakdown)
        reward *= env_ev.reward
    for part, ev in (("ACTION", action_ev), ("NL_ASSERTION", nl_ev), ("COMMUNICATE", comm_ev)):
        if part in basis and ev is not None:
            breakdown.update(ev.reward_breakdown or {})
            reward *= ev.reward
    out = Evaluation(
        reward,
        reward_basis=list(crit.reward_basis),
        reward_breakdown=breakdown,
        db_check=env_ev.db_check,
        env_assertions=env_ev.env_assertions,
        action_checks=action_ev.action_checks,
        communicate_checks=comm_ev.communicate_checks,
        nl_assertions=nl_ev.nl_assertions if nl_ev is not None else None,
        info={
            "env": env_ev.info,
            "nl": nl_ev.info if nl_ev is not None else None,
            "communicate": comm_ev.info,
            "action": action_ev.info,
        },
        gold_hashes=env_ev.gold_hashes,
        predicted_hashes=env_ev.predicted_hashes,
    )
    out.failures = _failures(out, predicted, gold)
    return out


def _failures(ev: Evaluation, predicted: Environment | None, gold: Environment | None) -> list[str]:
    lines: list[str] = []
    # A DB mismatch is a failure only when DB counts (telecom's gold env is stale by design).
    db_counts = "DB" in (ev.reward_basis or [])
    if (
        db_counts
        and ev.db_check
        and not ev.db_check["db_match"]
        and predicted is not None
        and gold is not None
    ):
        lines.append("DB differs from gold (predicted != gold):")
        pairs = [("agent", predicted.tools.db, gold.tools.db)]
        if predicted.user_tools is not None and gold.user_tools is not None:
            pairs.append(("user", predicted.user_tools.db, gold.user_tools.db))
        same = {
            side
            for side in ("agent", "user")
            if ev.predicted_hashes is not None
            and ev.gold_hashes is not None
            and ev.predicted_hashes.get(f"{side}_db_hash") == ev.gold_hashes.get(f"{side}_db_hash")
        }
        for side, p, g in pairs:
            if side not in same:  # an equal hash means no difference to walk
                lines.extend(f"  {side} {d}" for d in db_diff(p, g))
    for check in ev.action_checks or []:
        if not check["action_match"]:
            a = check["action"]
            lines.append(f"action not performed: {a['name']}({a['arguments']})")
    for check in ev.env_assertions or []:
        if not check["met"]:
            a = check["env_assertion"]
            lines.append(
                f"env assertion failed: {a['func_name']}({a['arguments']}) != {a['assert_value']}"
            )
    for check in ev.communicate_checks or []:
        if not check["met"]:
            lines.append(check["justification"])
    for check in ev.nl_assertions or []:
        if not check["met"]:
            lines.append(f"NL assertion not met: {check['nl_assertion']}")
    return lines
