"""Prompt texts τ³'s upstream keeps inside its Python source, read as literals with `ast`.

Nothing is executed: a prompt is the string assigned to a name at module level (or
inside one named function), written as a string constant, a constant followed by
`.strip()`, or an f-string — whose `{expression}` parts become `{expression}`
placeholders the caller fills (`{trajectory_str}`, `{nl_assertions}`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

__all__ = ["PROMPTS", "PromptSource", "PromptSourceError", "extract_prompt"]


class PromptSourceError(ValueError):
    """The upstream source does not hold the prompt where and as it was pinned."""


@dataclass(frozen=True)
class PromptSource:
    """Where one prompt lives upstream: file, assigned name, enclosing scope (if any):
    a dotted path of class and function names from module level."""

    name: str
    path: str
    variable: str
    function: str | None = None


PROMPTS = (
    PromptSource("agent_instruction", "src/tau2/agent/llm_agent.py", "AGENT_INSTRUCTION"),
    PromptSource("agent_system_prompt", "src/tau2/agent/llm_agent.py", "SYSTEM_PROMPT"),
    PromptSource("user_system_prompt", "src/tau2/user/user_simulator.py", "SYSTEM_PROMPT"),
    PromptSource(
        "nl_judge_system_prompt",
        "src/tau2/evaluator/evaluator_nl_assertions.py",
        "system_prompt",
        "NLAssertionsEvaluator.evaluate_nl_assertions",
    ),
    PromptSource(
        "nl_judge_user_prompt",
        "src/tau2/evaluator/evaluator_nl_assertions.py",
        "user_prompt",
        "NLAssertionsEvaluator.evaluate_nl_assertions",
    ),
)


def _text(node: ast.expr, what: str) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "strip"
        and not node.args
        and not node.keywords
    ):
        return _text(node.func.value, what).strip()
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                parts.append(value.value)
            elif (
                isinstance(value, ast.FormattedValue)
                and value.conversion == -1
                and value.format_spec is None
            ):
                parts.append("{" + ast.unparse(value.value) + "}")
            else:
                raise PromptSourceError(f"{what}: unsupported f-string part")
        return "".join(parts)
    raise PromptSourceError(f"{what}: not a string literal ({type(node).__name__})")


def _assignments(body: list[ast.stmt], variable: str) -> list[ast.expr]:
    found = []
    for stmt in body:
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == variable for t in stmt.targets
        ):
            found.append(stmt.value)
    return found


def extract_prompt(source: str, spec: PromptSource) -> str:
    """The prompt `spec` names in the upstream file text `source`."""
    what = f"{spec.path}: {spec.function + '.' if spec.function else ''}{spec.variable}"
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise PromptSourceError(f"{spec.path}: not Python ({exc.msg})") from exc
    body: list[ast.stmt] = tree.body
    if spec.function is not None:
        for name in spec.function.split("."):
            scopes = [
                n
                for n in body
                if isinstance(n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                and n.name == name
            ]
            if len(scopes) != 1:
                raise PromptSourceError(f"{what}: expected one scope {name!r}")
            body = scopes[0].body
    values = _assignments(body, spec.variable)
    if len(values) != 1:
        raise PromptSourceError(f"{what}: expected one assignment, found {len(values)}")
    return _text(values[0], what)
