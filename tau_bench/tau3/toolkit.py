"""How a τ³ domain declares its tools, and how they are called with the original's texts.

A domain's agent (or user) toolkit is a subclass of `Toolkit` whose tool methods carry the
`@tool(kind)` decorator, exactly like upstream's `@is_tool(ToolType...)`:

    class MockTools(Toolkit):
        @tool(ToolKind.WRITE)
        def create_task(self, user_id: str, title: str, description: str | None = None): ...

        def assert_task_status(self, task_id: str, expected_status: str) -> bool: ...

* Tools are listed in definition order (subclass tools first, then inherited ones), which
  is the order of upstream's `tools.json`.
* `mutates_state` defaults to True exactly for WRITE tools; only those are replayed when a
  message history is applied (`set_state`).
* Methods without the decorator are "environment functions": initialization actions and
  env assertions may call them, agents and users may not.
* `self.db` is the toolkit's database; the environment may re-point it (the original's
  `initialization_data` quirk), so tools must read `self.db` on every call, never cache it.
* Random ids must come from `self.ids.uuid4()`, so that the environment's deterministic
  mode can replace them by a counter (`B00000001`, … when a tool takes 8 hex digits).

Calls go through `call_tool` / `call_function`, which bind keyword arguments themselves and
raise CPython 3.12's `TypeError` texts (`Cls.method() missing 1 required positional
argument: 'x'`) whatever Python runs us. `exception_text` turns any exception into the text
the original put after `Error: `, pinning pydantic's error URL to 2.12 (spec §8.5).
"""

from __future__ import annotations

import inspect
import re
import uuid
from collections.abc import Callable, Mapping
from enum import StrEnum
from types import MethodType
from typing import Any, ClassVar, TypeVar

__all__ = [
    "IdSource",
    "ToolKind",
    "Toolkit",
    "bind_arguments",
    "exception_text",
    "pydantic_text",
    "tool",
]

F = TypeVar("F", bound=Callable[..., Any])

_TOOL_KIND = "__tau3_tool_kind__"
_MUTATES = "__tau3_mutates_state__"
PYDANTIC_VERSION_IN_TEXTS = "2.12"
_PYDANTIC_URL = re.compile(r"https://errors\.pydantic\.dev/[0-9]+\.[0-9]+/")


class ToolKind(StrEnum):
    """What a tool does (upstream `ToolType`); reported in action checks as its value."""

    READ = "read"
    WRITE = "write"
    THINK = "think"
    GENERIC = "generic"


def tool(kind: ToolKind = ToolKind.READ, *, mutates_state: bool | None = None) -> Callable[[F], F]:
    """Mark a toolkit method as a tool of `kind` (mutating iff WRITE unless overridden)."""
    mutates = kind is ToolKind.WRITE if mutates_state is None else mutates_state

    def mark(fn: F) -> F:
        setattr(fn, _TOOL_KIND, kind)
        setattr(fn, _MUTATES, mutates)
        return fn

    return mark


class IdSource:
    """Where tools get random ids: uuid4, or a counter when `deterministic` (one per env)."""

    def __init__(self, deterministic: bool = False) -> None:
        self.deterministic = deterministic
        self._count = 0
        self.drawn = 0
        """Ids drawn so far, in either mode (0: the episode so far is reproducible)."""

    def uuid4(self) -> uuid.UUID:
        """A random UUID4, or UUIDs whose hex starts `00000001`, `00000002`, … in draw order."""
        self.drawn += 1
        if not self.deterministic:
            return uuid.uuid4()
        self._count += 1
        return uuid.UUID(int=self._count << 96)


def _quoted_list(names: list[str]) -> str:
    quoted = [f"'{n}'" for n in names]
    if len(quoted) == 1:
        return quoted[0]
    if len(quoted) == 2:
        return f"{quoted[0]} and {quoted[1]}"
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}"


_SIGNATURES: dict[Any, Mapping[str, inspect.Parameter]] = {}


def _parameters(fn: Callable[..., Any]) -> Mapping[str, inspect.Parameter]:
    """`inspect.signature(fn).parameters`, cached per function (bound methods share one)."""
    key = (fn.__func__, True) if inspect.ismethod(fn) else (fn, False)
    params = _SIGNATURES.get(key)
    if params is None:
        params = _SIGNATURES[key] = inspect.signature(fn).parameters
    return params


_FAST: dict[Any, tuple[frozenset[str], frozenset[str]] | None] = {}
_PLAIN_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
# `_fast_check` of bound methods by their function (what `Toolkit._invoke` looks up).
_FAST_METHODS: dict[Any, tuple[frozenset[str], frozenset[str]] | None] = {}


def _fast_check(fn: Callable[..., Any]) -> tuple[frozenset[str], frozenset[str]] | None:
    """(accepted names, required names) when every parameter is a plain keyword one."""
    key = (fn.__func__, True) if inspect.ismethod(fn) else (fn, False)
    if key not in _FAST:
        params = _parameters(fn)
        plain = all(p.kind in _PLAIN_KINDS for p in params.values())
        required = frozenset(n for n, p in params.items() if p.default is inspect.Parameter.empty)
        _FAST[key] = (frozenset(params), required) if plain else None
    return _FAST[key]


def bind_arguments(qualname: str, fn: Callable[..., Any], arguments: Any) -> dict[str, Any]:
    """Check `fn(**arguments)` as CPython 3.12 would; raise its TypeError text on mismatch.

    `fn` is a bound method or plain function; `qualname` is what CPython names it
    (`Class.method`). Only keyword calls are modelled (the original never passes
    positionals), which is all a tool call can be.
    """
    fast = _fast_check(fn)
    if fast is not None and type(arguments) is dict:
        names, required = fast
        keys = arguments.keys()
        if keys <= names and required <= keys:  # the common, valid call
            return dict(arguments)
    if not isinstance(arguments, Mapping):
        raise TypeError(
            f"{qualname}() argument after ** must be a mapping, not {type(arguments).__name__}"
        )
    params = _parameters(fn)
    accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    for key in arguments:
        if not isinstance(key, str):
            raise TypeError("keywords must be strings")
        param = params.get(key)
        if param is None and not accepts_any:
            raise TypeError(f"{qualname}() got an unexpected keyword argument '{key}'")
        if param is not None and param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TypeError(
                f"{qualname}() got some positional-only arguments passed as keyword "
                f"arguments: '{key}'"
            )
    missing_pos = [
        name
        for name, p in params.items()
        if p.default is inspect.Parameter.empty
        and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.POSITIONAL_ONLY)
        and name not in arguments
    ]
    if missing_pos:
        plural = "argument" if len(missing_pos) == 1 else "arguments"
        raise TypeError(
            f"{qualname}() missing {len(missing_pos)} required positional {plural}: "
            f"{_quoted_list(missing_pos)}"
        )
    missing_kw = [
        name
        for name, p in params.items()
        if p.default is inspect.Parameter.empty
        and p.kind is inspect.Parameter.KEYWORD_ONLY
        and name not in arguments
    ]
    if missing_kw:
        plural = "argument" if len(missing_kw) == 1 else "arguments"
        raise TypeError(
            f"{qualname}() missing {len(missing_kw)} required keyword-only {plural}: "
            f"{_quoted_list(missing_kw)}"
        )
    return dict(arguments)


def pydantic_text(text: str) -> str:
    """`text` with pydantic's error URLs pinned to the version the original ran (2.12)."""
    return _PYDANTIC_URL.sub(f"https://errors.pydantic.dev/{PYDANTIC_VERSION_IN_TEXTS}/", text)


def exception_text(exc: BaseException) -> str:
    """`str(exc)` as the original produced it (the part after `Error: `)."""
    return pydantic_text(str(exc))


class Toolkit:
    """Base of every τ³ toolkit: holds `db`, lists and calls its tools (see module doc)."""

    _tool_order: ClassVar[tuple[str, ...]] = ()

    def __init__(self, db: Any, ids: IdSource | None = None) -> None:
        self.db = db
        self.ids = ids if ids is not None else IdSource()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = [name for name, attr in vars(cls).items() if hasattr(attr, _TOOL_KIND)]
        inherited = [n for n in getattr(cls, "_tool_order", ()) if n not in own]
        cls._tool_order = tuple(own + inherited)

    @classmethod
    def tool_names(cls) -> list[str]:
        """Tool names in the original's order (as in tools.json)."""
        return list(cls._tool_order)

    @classmethod
    def has_tool(cls, name: str) -> bool:
        return name in cls._tool_order

    @classmethod
    def tool_kind(cls, name: str) -> ToolKind:
        kind: ToolKind = getattr(getattr(cls, name), _TOOL_KIND)
        return kind

    @classmethod
    def mutates_state(cls, name: str) -> bool:
        return bool(getattr(getattr(cls, name), _MUTATES, True))

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """Run tool `name`; `ValueError("Tool '<name>' not found.")` if it is not a tool."""
        if not isinstance(name, str) or name not in self._tool_order:
            raise ValueError(f"Tool '{name}' not found.")
        return self._invoke(name, getattr(self, name), arguments)

    def call_function(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """Run any attribute `name` (tool or helper), as initialization actions/assertions do."""
        fn = getattr(self, name)  # AttributeError text is the original's
        return self._invoke(name, fn, arguments)

    def _invoke(self, name: str, fn: Any, arguments: Mapping[str, Any]) -> Any:
        # The common case, a bound method and a dict: its check is looked up by function.
        if type(fn) is MethodType and type(arguments) is dict:
            func = fn.__func__
            if func in _FAST_METHODS:
                checked = _FAST_METHODS[func]
            else:
                checked = _FAST_METHODS[func] = _fast_check(fn)
            if checked is not None:
                keys = arguments.keys()
                if keys <= checked[0] and checked[1] <= keys:  # a valid call: nothing to report
                    return fn(**arguments)
        fast = _fast_check(fn)
        if fast is not None and type(arguments) is dict:
            names, required = fast  # `self` is not among the names of a bound method
            keys = arguments.keys()
            if keys <= names and required <= keys:  # a valid call: nothing to report
                return fn(**arguments)
        # CPython names the class that DEFINES the method; domain classes therefore carry
        # upstream's class names (AirlineTools, MockUserTools, ...).
        target = fn.__func__ if inspect.ismethod(fn) else fn
        qualname = getattr(target, "__qualname__", name)
        if "self" in arguments and inspect.ismethod(fn):
            raise TypeError(f"{qualname}() got multiple values for argument 'self'")
        return fn(**bind_arguments(qualname, fn, arguments))
