"""Types named in τ³'s upstream tool signatures, rebuilt from its source without running it.

A tool schema is pydantic's JSON schema of the tool's signature, so the annotations must
become real types: `Literal` aliases, `str`-`Enum`s and pydantic models defined in
upstream's `data_model.py` files. This reads those definitions with `ast` and builds
equivalent objects: typing constructs, `Enum(...)` from the member constants, and model
classes from the annotated fields, their `Field(...)` arguments, `model_config` and
docstring. Only a small, explicit vocabulary is evaluated (names, constants, attribute
access on enums, subscripts, `|`, and calls to `Field` / `ConfigDict`); anything else
is an error naming the file, never executed. Names are resolved lazily, so only what the
tools reference has to be among the sources.
"""

from __future__ import annotations

import ast
import builtins
import enum
import operator
import types
import typing
from collections.abc import Mapping
from typing import Any

import pydantic

__all__ = ["ModuleRef", "SourceTypeError", "UpstreamModules"]


class SourceTypeError(ValueError):
    """An upstream definition needed for a tool schema cannot be read."""


class ModuleRef:
    """A whitelisted library module reached through `import x` (attributes are filtered)."""

    def __init__(self, name: str) -> None:
        self.name = name


_BUILTINS = frozenset(
    {"str", "int", "float", "bool", "bytes", "dict", "list", "tuple", "set", "frozenset",
     "object", "type"}
)  # fmt: skip
_LIBRARY: dict[str, frozenset[str]] = {
    "typing": frozenset(
        {"Any", "Dict", "List", "Optional", "Union", "Literal", "Tuple", "Set", "FrozenSet",
         "Annotated", "Sequence", "Mapping"}
    ),
    "typing_extensions": frozenset({"Annotated", "Literal"}),
    "pydantic": frozenset({"BaseModel", "Field", "ConfigDict"}),
    "enum": frozenset({"Enum", "IntEnum", "StrEnum"}),
    "datetime": frozenset({"date", "datetime", "time", "timedelta"}),
}  # fmt: skip
_CALLABLE = (pydantic.Field, pydantic.ConfigDict)


def _library_attr(module: str, name: str) -> Any:
    if name not in _LIBRARY.get(module, frozenset()):
        raise SourceTypeError(f"{module}.{name} is not in the vocabulary read from source")
    return getattr(__import__(module), name)


class UpstreamModules:
    """Upstream modules by dotted name, from `{upstream path: source text}`."""

    def __init__(self, sources: Mapping[str, str]) -> None:
        self._sources = dict(sources)
        self._trees: dict[str, ast.Module] = {}
        self._values: dict[tuple[str, str], Any] = {}
        self._busy: set[tuple[str, str]] = set()

    def path(self, module: str) -> str:
        """The upstream path holding `module` (a package's `__init__.py`)."""
        base = "src/" + module.replace(".", "/")
        for candidate in (base + ".py", base + "/__init__.py"):
            if candidate in self._sources:
                return candidate
        raise SourceTypeError(f"module {module} ({base}.py) is not among the sources read")

    def tree(self, module: str) -> ast.Module:
        if module not in self._trees:
            path = self.path(module)
            try:
                self._trees[module] = ast.parse(self._sources[path], filename=path)
            except SyntaxError as exc:
                raise SourceTypeError(f"{path}: not Python ({exc.msg})") from exc
        return self._trees[module]

    def origin(self, module: str, name: str) -> tuple[str, ast.stmt | None]:
        """Where `name` is bound at module level, following `from upstream import name`:
        (defining module, last binding statement there or None)."""
        binding = self._binding(module, name)
        if isinstance(binding, ast.ImportFrom):
            source = _absolute(module, binding, self.path(module).endswith("__init__.py"))
            if source.split(".")[0] not in _LIBRARY:
                return self.origin(source, _imported_name(binding, name))
        return module, binding

    def _binding(self, module: str, name: str) -> ast.stmt | None:
        binding: ast.stmt | None = None
        for stmt in self.tree(module).body:
            if _binds(stmt, name):
                binding = stmt
        return binding

    def lookup(self, module: str, name: str) -> Any:
        """The value of the module-level `name` in `module`, built on first use."""
        key = (module, name)
        if key in self._values:
            return self._values[key]
        if key in self._busy:
            raise SourceTypeError(f"{self.path(module)}: {name} refers to itself")
        self._busy.add(key)
        try:
            value = self._bind(module, name)
        finally:
            self._busy.discard(key)
        self._values[key] = value
        return value

    def _bind(self, module: str, name: str) -> Any:
        binding = self._binding(module, name)
        if binding is None:
            if name in _BUILTINS:
                return getattr(builtins, name)
            raise SourceTypeError(f"{self.path(module)}: {name} is not defined")
        if isinstance(binding, ast.ClassDef):
            return self._build_class(module, binding)
        if isinstance(binding, ast.Assign | ast.AnnAssign) and binding.value is not None:
            return self.evaluate(module, binding.value)
        if isinstance(binding, ast.Import):
            alias = next(a for a in binding.names if (a.asname or a.name) == name)
            if alias.name not in _LIBRARY:
                raise SourceTypeError(f"{self.path(module)}: import {alias.name} is not read")
            return ModuleRef(alias.name)
        if isinstance(binding, ast.ImportFrom):
            source = _absolute(module, binding, self.path(module).endswith("__init__.py"))
            imported = _imported_name(binding, name)
            if source.split(".")[0] in _LIBRARY:
                return _library_attr(source, imported)
            return self.lookup(source, imported)
        raise SourceTypeError(f"{self.path(module)}: cannot read the binding of {name}")

    def evaluate(self, module: str, node: ast.expr) -> Any:
        """The value of an annotation, default or `Field(...)` expression."""
        where = f"{self.path(module)}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return None if node.id == "None" else self.lookup(module, node.id)
        if isinstance(node, ast.Attribute):
            owner = self.evaluate(module, node.value)
            if isinstance(owner, ModuleRef):
                return _library_attr(owner.name, node.attr)
            if isinstance(owner, type) and issubclass(owner, enum.Enum):
                return getattr(owner, node.attr)
            if isinstance(owner, enum.Enum) and node.attr in ("value", "name"):
                return getattr(owner, node.attr)
            raise SourceTypeError(f"{where}: attribute {node.attr!r} is not read")
        if isinstance(node, ast.Subscript):
            base = self.evaluate(module, node.value)
            index = node.slice
            args = (
                tuple(self.evaluate(module, e) for e in index.elts)
                if isinstance(index, ast.Tuple)
                else self.evaluate(module, index)
            )
            if not (base in (list, dict, tuple, set, frozenset, type) or _is_typing(base)):
                raise SourceTypeError(f"{where}: only typing constructs are subscripted")
            return base[args]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return operator.or_(self.evaluate(module, node.left), self.evaluate(module, node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value = self.evaluate(module, node.operand)
            if isinstance(value, int | float):
                return -value
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items = [self.evaluate(module, e) for e in node.elts]
            return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
        if isinstance(node, ast.Dict) and None not in node.keys:
            return {
                self.evaluate(module, k): self.evaluate(module, v)
                for k, v in zip(node.keys, node.values, strict=True)
                if k is not None
            }
        if isinstance(node, ast.Call):
            func = self.evaluate(module, node.func)
            if not any(func is allowed for allowed in _CALLABLE) or any(
                k.arg is None for k in node.keywords
            ):
                raise SourceTypeError(f"{where}: only Field(...) / ConfigDict(...) are called")
            args = [self.evaluate(module, a) for a in node.args]
            kwargs = {k.arg: self.evaluate(module, k.value) for k in node.keywords if k.arg}
            return func(*args, **kwargs)
        raise SourceTypeError(f"{where}: {type(node).__name__} is not read from source")

    def _build_class(self, module: str, node: ast.ClassDef) -> type:
        where = f"{self.path(module)}: class {node.name}"
        if node.keywords or node.decorator_list:
            raise SourceTypeError(f"{where}: class keywords / decorators are not read")
        bases = tuple(self.evaluate(module, b) for b in node.bases)
        if not all(isinstance(b, type) for b in bases):
            raise SourceTypeError(f"{where}: a base is not a class")
        doc = ast.get_docstring(node, clean=False)
        if any(issubclass(b, enum.Enum) for b in bases):
            return _build_enum(where, module, node, bases, doc)
        if not bases or not all(issubclass(b, pydantic.BaseModel) for b in bases):
            raise SourceTypeError(f"{where}: neither an Enum nor a pydantic model")
        namespace: dict[str, Any] = {"__module__": module, "__qualname__": node.name}
        annotations: dict[str, Any] = {}
        for stmt in node.body[1 if doc is not None else 0 :]:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                annotations[stmt.target.id] = self.evaluate(module, stmt.annotation)
                if stmt.value is not None:
                    namespace[stmt.target.id] = self.evaluate(module, stmt.value)
            elif _binds(stmt, "model_config") and isinstance(stmt, ast.Assign):
                namespace["model_config"] = self.evaluate(module, stmt.value)
            elif not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.Pass):
                raise SourceTypeError(f"{where}: line {stmt.lineno} is not read")
        namespace["__annotations__"] = annotations
        namespace["__doc__"] = doc
        return types.new_class(node.name, bases, exec_body=lambda ns: ns.update(namespace))


def _build_enum(
    where: str, module: str, node: ast.ClassDef, bases: tuple[type, ...], doc: str | None
) -> type:
    enum_bases = [b for b in bases if issubclass(b, enum.Enum)]
    mixins = [b for b in bases if not issubclass(b, enum.Enum)]
    if len(enum_bases) != 1 or list(enum_bases[0]) or len(mixins) > 1:
        raise SourceTypeError(f"{where}: only `class X(<type>, Enum)` enums are read")
    members: list[tuple[str, Any]] = []
    for stmt in node.body[1 if doc is not None else 0 :]:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Constant)
        ):
            members.append((stmt.targets[0].id, stmt.value.value))
        elif not isinstance(stmt, ast.FunctionDef | ast.Pass):
            raise SourceTypeError(f"{where}: line {stmt.lineno} is not a constant member")
    factory: Any = enum_bases[0]  # the functional API: Enum(name, members, ...)
    made = factory(
        node.name, members, module=module, qualname=node.name, type=mixins[0] if mixins else None
    )
    made.__doc__ = doc
    return typing.cast(type, made)


def _is_typing(value: Any) -> bool:
    return getattr(type(value), "__module__", "") in ("typing", "typing_extensions") or (
        getattr(value, "__module__", "") in ("typing", "typing_extensions")
    )


def _binds(stmt: ast.stmt, name: str) -> bool:
    if isinstance(stmt, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return stmt.name == name
    if isinstance(stmt, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets)
    if isinstance(stmt, ast.AnnAssign):
        return isinstance(stmt.target, ast.Name) and stmt.target.id == name
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return any((a.asname or a.name.split(".")[0]) == name for a in stmt.names)
    return False


def _imported_name(stmt: ast.ImportFrom, name: str) -> str:
    return next(a.name for a in stmt.names if (a.asname or a.name) == name)


def _absolute(module: str, stmt: ast.ImportFrom, is_package: bool) -> str:
    if stmt.level == 0:
        return stmt.module or ""
    parts = module.split(".")
    keep = len(parts) - stmt.level + (1 if is_package else 0)
    if keep <= 0:
        raise SourceTypeError(f"{module}: relative import beyond the top package")
    return ".".join(parts[:keep] + ([stmt.module] if stmt.module else []))
