"""τ³ tool schema files (`<domain>/tools.json`, `user_tools.json`) built from upstream source.

Upstream does not ship these files: at run time it lists a toolkit class's `@is_tool`
methods (own methods in definition order, then inherited ones), builds a pydantic model
named `parameters` from each method's signature — the docstring's `Args:` text as field
descriptions — and hands `model_json_schema()` to the LLM. This does the same from the
pinned source files read with `ast` (nothing upstream is imported or executed): the
signature and docstring come from the syntax tree, the annotation types from
`tau3_source_types`, and the files are written as upstream's are, `json.dumps(indent=2)`
plus a newline. The result is checked against the manifest's sha256 by the caller.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pydantic

from tau_bench.data.tau3_docstrings import DocstringError, ParsedDocstring, parse_docstring
from tau_bench.data.tau3_source_types import SourceTypeError, UpstreamModules

__all__ = ["ToolSchemaError", "render", "toolkit_schemas"]

_TOOL_DECORATOR = "is_tool"  # `is_discoverable_tool` tools are left out of the list, as upstream


class ToolSchemaError(ValueError):
    """A toolkit's schemas cannot be rebuilt from the given source."""


def _decorator_name(node: ast.expr) -> str | None:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Name):
        return target.id
    return target.attr if isinstance(target, ast.Attribute) else None


def _is_tool(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        isinstance(d, ast.Call) and _decorator_name(d) == _TOOL_DECORATOR for d in fn.decorator_list
    )


def _class_attrs(node: ast.ClassDef) -> dict[str, ast.stmt]:
    """The class namespace as Python builds it: first position, last value."""
    attrs: dict[str, ast.stmt] = {}
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            attrs[stmt.name] = stmt
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    attrs[target.id] = stmt
        elif (
            isinstance(stmt, ast.AnnAssign)
            and stmt.value is not None
            and isinstance(stmt.target, ast.Name)
        ):
            attrs[stmt.target.id] = stmt
    return attrs


@dataclass(frozen=True)
class _Class:
    module: str
    node: ast.ClassDef
    bases: tuple[_Class, ...]


def _load_class(modules: UpstreamModules, module: str, name: str) -> _Class:
    origin, binding = modules.origin(module, name)
    if not isinstance(binding, ast.ClassDef):
        raise ToolSchemaError(f"{modules.path(origin)}: {name} is not a class definition")
    bases = []
    for base in binding.bases:
        if not isinstance(base, ast.Name):
            raise ToolSchemaError(f"{modules.path(origin)}: base of {name} is not a plain name")
        bases.append(_load_class(modules, origin, base.id))
    return _Class(origin, binding, tuple(bases))


def _tool_order(cls: _Class) -> list[str]:
    """Names of `cls`'s tools: its own `@is_tool` methods in order, then its base's."""
    if len(cls.bases) > 1:
        raise ToolSchemaError(f"{cls.node.name}: toolkits with several bases are not read")
    own = [
        name
        for name, stmt in _class_attrs(cls.node).items()
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and _is_tool(stmt)
    ]
    inherited = _tool_order(cls.bases[0]) if cls.bases else []
    return own + [name for name in inherited if name not in own]


def _resolve_method(cls: _Class, name: str) -> tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The definition `getattr(instance, name)` finds (single inheritance)."""
    stmt = _class_attrs(cls.node).get(name)
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        return cls.module, stmt
    if stmt is None and cls.bases:
        return _resolve_method(cls.bases[0], name)
    raise ToolSchemaError(f"{cls.node.name}.{name} is not a method")


def _parameters_model(
    modules: UpstreamModules,
    module: str,
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    doc: ParsedDocstring,
) -> type[pydantic.BaseModel]:
    where = f"{modules.path(module)}: {fn.name}"
    args = fn.args
    if args.vararg or args.kwarg:
        raise ToolSchemaError(f"{where}: *args / **kwargs are not read")
    decorators = {_decorator_name(d) for d in fn.decorator_list}
    positional = [*args.posonlyargs, *args.args]
    if "staticmethod" not in decorators:
        positional = positional[1:]  # the bound method drops self / cls
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += list(args.defaults)[-len(positional) :] if positional else []
    described = {p.name: p for p in doc.params}
    fields: dict[str, Any] = {}
    pairs = [
        *zip(positional, defaults, strict=True),
        *zip(args.kwonlyargs, args.kw_defaults, strict=True),
    ]
    for arg, default_node in pairs:
        default: Any = ... if default_node is None else modules.evaluate(module, default_node)
        if arg.arg in described:
            default = pydantic.Field(default, description=described[arg.arg].description)
        if arg.annotation is not None:
            annotation = modules.evaluate(module, arg.annotation)
        elif arg.arg in described and described[arg.arg].type_name is not None:
            raise ToolSchemaError(f"{where}: a type given only in the docstring is not read")
        else:
            annotation = Any
        fields[arg.arg] = (annotation, default)
    return pydantic.create_model("parameters", **fields)


def toolkit_schemas(
    sources: Mapping[str, str], module: str, class_name: str
) -> list[dict[str, Any]]:
    """The OpenAI tool list upstream builds for `module.class_name`, in its order."""
    modules = UpstreamModules(sources)
    try:
        cls = _load_class(modules, module, class_name)
        schemas = []
        for name in _tool_order(cls):
            where, fn = _resolve_method(cls, name)
            try:
                doc = parse_docstring(ast.get_docstring(fn, clean=False))
            except DocstringError as exc:
                raise ToolSchemaError(f"{modules.path(where)}: {name}: {exc}") from exc
            params = _parameters_model(modules, where, fn, doc)
            description = doc.short or ""
            if not description:
                description = name
            elif doc.long:
                description += "\n\n" + doc.long
            schemas.append(
                {
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": description,
                        "parameters": params.model_json_schema(),
                    },
                }
            )
        return schemas
    except ToolSchemaError:
        raise
    except SourceTypeError as exc:
        raise ToolSchemaError(str(exc)) from exc
    except (pydantic.PydanticUserError, NameError, TypeError, ValueError) as exc:
        # what Python or pydantic refuses when the types are built: a ToolSchemaError too,
        # so a pull reports it as a pull error rather than a traceback
        raise ToolSchemaError(f"{module}.{class_name}: cannot build its types: {exc}") from exc


def render(schemas: list[dict[str, Any]]) -> bytes:
    """The file text, as upstream's files are written."""
    return (json.dumps(schemas, indent=2) + "\n").encode("utf-8")
