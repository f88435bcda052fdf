"""Read upstream τ-bench Python sources as literal data, with `ast` (never exec/import).

Upstream keeps its task lists, rules and tool schemas in Python modules:

* task lists: ``NAME = [Task(annotator=..., user_id=..., instruction=..., actions=[Action(
  name=..., kwargs={...}), ...], outputs=[...]), ...]``
* rules: ``RULES = ["...", ...]``
* tools: ``tools/__init__.py`` imports one class per module (``from .x import X``) and lists
  them in ``ALL_TOOLS = [...]``; each class's ``get_info`` returns a dict literal.

Every value is evaluated with `ast.literal_eval`, so nothing from the downloaded files is
ever executed. Anything that is not a literal raises `UpstreamSourceError` naming the line.
"""

from __future__ import annotations

import ast
from typing import Any

__all__ = [
    "UpstreamSourceError",
    "read_rules",
    "read_tasks",
    "read_tool_imports",
    "read_tool_info",
    "read_tool_order",
]

RULES_VARIABLES = ("RULES", "rules")


class UpstreamSourceError(ValueError):
    """An upstream source file does not have the expected literal shape."""


def _parse(source: str, what: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        raise UpstreamSourceError(f"{what}: not valid Python ({exc})") from exc


def _literal(node: ast.AST, what: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        line = getattr(node, "lineno", "?")
        raise UpstreamSourceError(f"{what} (line {line}) is not a literal: {exc}") from exc


def _assigned_value(module: ast.Module, variable: str) -> ast.expr | None:
    """The value of the last top-level `variable = ...` (or annotated) assignment."""
    found: ast.expr | None = None
    for stmt in module.body:
        if isinstance(stmt, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == variable for t in stmt.targets):
                found = stmt.value
        elif (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and stmt.target.id == variable
            and stmt.value is not None
        ):
            found = stmt.value
    return found


def _callee_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _call_kwargs(node: ast.Call, expected: str, what: str) -> dict[str, ast.expr]:
    """Keyword arguments of a `Task(...)` / `Action(...)` call, as AST nodes."""
    if _callee_name(node) != expected:
        raise UpstreamSourceError(
            f"{what} (line {node.lineno}): expected a {expected}(...) call, "
            f"got {_callee_name(node) or 'a call'}(...)"
        )
    if node.args:
        raise UpstreamSourceError(
            f"{what} (line {node.lineno}): {expected}(...) has positional arguments"
        )
    out: dict[str, ast.expr] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise UpstreamSourceError(f"{what} (line {node.lineno}): **kwargs in {expected}(...)")
        out[kw.arg] = kw.value
    return out


def _fields(node: ast.expr, expected: str, what: str) -> dict[str, ast.expr]:
    """Fields of either a `Name(...)` call or a dict literal with string keys."""
    if isinstance(node, ast.Call):
        return _call_kwargs(node, expected, what)
    if isinstance(node, ast.Dict):
        out: dict[str, ast.expr] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                raise UpstreamSourceError(f"{what} (line {node.lineno}): non-string key")
            out[key.value] = value
        return out
    raise UpstreamSourceError(
        f"{what} (line {getattr(node, 'lineno', '?')}): expected {expected}(...) or a dict"
    )


def _read_action(node: ast.expr, what: str) -> dict[str, Any]:
    fields = _fields(node, "Action", what)
    if "name" not in fields:
        raise UpstreamSourceError(f"{what} (line {node.lineno}): Action without name")
    name = _literal(fields["name"], f"{what} action name")
    args_node = fields.get("kwargs", fields.get("arguments"))
    kwargs = {} if args_node is None else _literal(args_node, f"{what} action kwargs")
    if not isinstance(name, str) or not isinstance(kwargs, dict):
        raise UpstreamSourceError(f"{what} (line {node.lineno}): malformed Action")
    return {"name": name, "kwargs": kwargs}


def _read_task(node: ast.expr, what: str) -> dict[str, Any]:
    fields = _fields(node, "Task", what)
    for required in ("user_id", "instruction"):
        if required not in fields:
            raise UpstreamSourceError(f"{what} (line {node.lineno}): Task without {required}")
    actions_node = fields.get("actions")
    if actions_node is None:
        actions: list[dict[str, Any]] = []
    elif isinstance(actions_node, ast.List | ast.Tuple):
        actions = [_read_action(a, what) for a in actions_node.elts]
    else:
        raise UpstreamSourceError(f"{what} (line {node.lineno}): actions is not a list")
    outputs = _literal(fields["outputs"], f"{what} outputs") if "outputs" in fields else []
    if not isinstance(outputs, list | tuple):
        raise UpstreamSourceError(f"{what} (line {node.lineno}): outputs is not a list")
    task: dict[str, Any] = {
        "user_id": _literal(fields["user_id"], f"{what} user_id"),
        "instruction": _literal(fields["instruction"], f"{what} instruction"),
        "actions": actions,
        "outputs": list(outputs),
    }
    if "annotator" in fields:
        task["annotator"] = _literal(fields["annotator"], f"{what} annotator")
    return task


def read_tasks(source: str, variable: str) -> list[dict[str, Any]]:
    """The task list assigned to `variable`, as JSON-ready dicts.

    Key order: user_id, instruction, actions ({name, kwargs}), outputs, annotator. kwargs
    keep their source order and number types; a missing `outputs` becomes [].
    """
    what = f"task list {variable}"
    module = _parse(source, what)
    value = _assigned_value(module, variable)
    if value is None:
        raise UpstreamSourceError(f"{what}: no top-level assignment to {variable}")
    if not isinstance(value, ast.List | ast.Tuple):
        raise UpstreamSourceError(f"{what} (line {value.lineno}): not a list literal")
    return [_read_task(elt, f"{what}[{i}]") for i, elt in enumerate(value.elts)]


def read_rules(source: str) -> list[str]:
    """The `RULES = [...]` list of strings."""
    module = _parse(source, "rules")
    for variable in RULES_VARIABLES:
        value = _assigned_value(module, variable)
        if value is not None:
            rules = _literal(value, f"rules {variable}")
            if not isinstance(rules, list | tuple) or not all(isinstance(r, str) for r in rules):
                raise UpstreamSourceError(f"rules {variable} is not a list of strings")
            return list(rules)
    raise UpstreamSourceError("rules: no top-level assignment to RULES")


def read_tool_imports(init_source: str) -> list[tuple[str, str]]:
    """(module, class) of every tool in `ALL_TOOLS` order, resolved via `from .m import C`."""
    module = _parse(init_source, "tools/__init__.py")
    imported: dict[str, str] = {}
    for stmt in module.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.level >= 1 and stmt.module:
            for alias in stmt.names:
                imported[alias.asname or alias.name] = stmt.module
    value = _assigned_value(module, "ALL_TOOLS")
    if value is None:
        raise UpstreamSourceError("tools/__init__.py: no top-level assignment to ALL_TOOLS")
    if not isinstance(value, ast.List | ast.Tuple):
        raise UpstreamSourceError("tools/__init__.py: ALL_TOOLS is not a list literal")
    order: list[tuple[str, str]] = []
    for elt in value.elts:
        if not isinstance(elt, ast.Name):
            raise UpstreamSourceError(
                f"tools/__init__.py (line {elt.lineno}): ALL_TOOLS entry is not a name"
            )
        if elt.id not in imported:
            raise UpstreamSourceError(
                f"tools/__init__.py: {elt.id} is in ALL_TOOLS but not imported from a tool module"
            )
        order.append((imported[elt.id], elt.id))
    return order


def read_tool_order(init_source: str) -> list[str]:
    """Tool module names (``tools/<module>.py``) in `ALL_TOOLS` order."""
    return [module for module, _cls in read_tool_imports(init_source)]


def _get_info_return(cls: ast.ClassDef) -> ast.expr | None:
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "get_info":
            returns = [s for s in stmt.body if isinstance(s, ast.Return)]
            if len(returns) != 1 or returns[0].value is None:
                raise UpstreamSourceError(
                    f"{cls.name}.get_info (line {stmt.lineno}): expected one `return {{...}}`"
                )
            return returns[0].value
    return None


def read_tool_info(source: str, class_name: str | None = None) -> dict[str, Any]:
    """The dict literal returned by a tool class's `get_info` method.

    With `class_name`, that class; otherwise the module's only class defining `get_info`.
    """
    module = _parse(source, f"tool {class_name or ''}".strip())
    found: list[tuple[str, ast.expr]] = []
    for stmt in module.body:
        if isinstance(stmt, ast.ClassDef) and (class_name is None or stmt.name == class_name):
            value = _get_info_return(stmt)
            if value is not None:
                found.append((stmt.name, value))
    if not found:
        target = f"class {class_name}" if class_name else "any class"
        raise UpstreamSourceError(f"tool source: no get_info in {target}")
    if len(found) > 1:
        names = ", ".join(n for n, _ in found)
        raise UpstreamSourceError(f"tool source: several classes define get_info ({names})")
    name, value = found[0]
    info = _literal(value, f"{name}.get_info return value")
    if not isinstance(info, dict):
        raise UpstreamSourceError(f"{name}.get_info does not return a dict literal")
    return info
