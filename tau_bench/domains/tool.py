"""How a domain tool is declared and called, with the original's error texts.

The original called `ToolClass.invoke(data=db, **kwargs)` and turned any exception into
`"Error: " + str(exc)`. Argument errors (unknown, missing, a kwarg named `data`) therefore
surfaced as CPython 3.11 `TypeError` texts naming the upstream class. We bind arguments
ourselves and write those texts explicitly, so observations do not depend on the Python
version we run on (spec §3.2, Q19).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

ToolFunction = Callable[..., Any]


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


@dataclass(frozen=True)
class Tool:
    """A domain tool: a pure function `fn(db, **kwargs) -> str` over an episode DB."""

    name: str
    fn: ToolFunction
    domain: str
    params: tuple[str, ...] = field(default=())
    writes: bool = False

    @classmethod
    def of(cls, domain: str, fn: ToolFunction, *, writes: bool = False) -> Tool:
        sig = inspect.signature(fn)
        params = tuple(list(sig.parameters)[1:])  # first parameter is the DB
        return cls(name=fn.__name__, fn=fn, domain=domain, params=params, writes=writes)

    @property
    def class_name(self) -> str:
        return _camel(self.name)

    @property
    def qualified(self) -> str:
        return f"{self.class_name}.invoke()"

    @property
    def module_qualified(self) -> str:
        return f"tau_bench.envs.{self.domain}.tools.{self.name}.{self.class_name}.invoke()"

    def bind(self, kwargs: Any) -> dict[str, Any]:
        """Check kwargs as CPython 3.11 would for `invoke(data=db, **kwargs)`."""
        if not isinstance(kwargs, Mapping):
            raise TypeError(
                f"{self.module_qualified} argument after ** must be a mapping, "
                f"not {type(kwargs).__name__}"
            )
        if "data" in kwargs:
            raise TypeError(
                f"{self.module_qualified} got multiple values for keyword argument 'data'"
            )
        for key in kwargs:
            if key not in self.params:
                raise TypeError(f"{self.qualified} got an unexpected keyword argument '{key}'")
        missing = [p for p in self.params if p not in kwargs]
        if missing:
            quoted = [f"'{m}'" for m in missing]
            if len(quoted) == 1:
                names = quoted[0]
            elif len(quoted) == 2:
                names = f"{quoted[0]} and {quoted[1]}"
            else:
                names = ", ".join(quoted[:-1]) + f", and {quoted[-1]}"
            plural = "argument" if len(missing) == 1 else "arguments"
            raise TypeError(
                f"{self.qualified} missing {len(missing)} required positional {plural}: {names}"
            )
        return dict(kwargs)

    def __call__(self, db: Any, kwargs: Any) -> Any:
        return self.fn(db, **self.bind(kwargs))
