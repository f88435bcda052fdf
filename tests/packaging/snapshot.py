"""The public surface of the `tau_adapters` SDK, as data, and its checked-in snapshot.

Adapter authors program against `tau_adapters.__all__`; a renamed parameter or a dropped
name breaks their packages. test_public_api.py compares the live surface with
tau_adapters_api.json; after an intended change, rewrite the snapshot and commit it:

    .venv/bin/python -m tests.packaging.snapshot
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any

SNAPSHOT = Path(__file__).with_name("tau_adapters_api.json")
UPDATE_COMMAND = ".venv/bin/python -m tests.packaging.snapshot"

# Where a name is defined inside the SDK is not part of its contract: drop the module path.
_QUALIFIED = re.compile(r"\btau_adapters(?:\.\w+)*\.(?=[A-Za-z_]\w*\b)")
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def _clean(text: str) -> str:
    return _ADDRESS.sub("", _QUALIFIED.sub("", text))


def _signature(obj: Any) -> str | None:
    try:
        return _clean(str(inspect.signature(obj)))
    except (TypeError, ValueError):
        return None


def _member(value: Any) -> str:
    if isinstance(value, property):
        return "property"
    if isinstance(value, staticmethod | classmethod):
        return f"{type(value).__name__} {_signature(value.__func__)}"
    if inspect.iscoroutinefunction(value):
        return f"async def {_signature(value)}"
    if inspect.isfunction(value):
        return f"def {_signature(value)}"
    return f"attribute {type(value).__name__}"


def _class_kind(cls: type) -> str:
    if getattr(cls, "_is_protocol", False):
        return "protocol"
    if issubclass(cls, BaseException):
        return "exception"
    if issubclass(cls, enum.Enum):
        return "enum"
    if dataclasses.is_dataclass(cls):
        return "dataclass"
    return "class"


def _describe_class(cls: type) -> dict[str, Any]:
    kind = _class_kind(cls)
    ignored = {object, typing.Generic, typing.Protocol, BaseException, Exception}
    entry: dict[str, Any] = {
        "kind": kind,
        "bases": [b.__qualname__ for b in cls.__bases__ if b not in ignored],
    }
    if kind != "protocol":
        entry["signature"] = _signature(cls)
    if kind == "dataclass":
        entry["frozen"] = cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    annotations = inspect.get_annotations(cls)
    members = {
        name: _member(value)
        for name, value in cls.__dict__.items()
        if not name.startswith("_") and not (kind == "dataclass" and name in annotations)
    }
    # Annotated attributes a protocol or plain class requires (dataclass fields are in the
    # signature already).
    if kind != "dataclass":
        for name, annotation in annotations.items():
            if not name.startswith("_"):
                members.setdefault(name, f"attribute {_clean(str(annotation))}")
    entry["members"] = dict(sorted(members.items()))
    return entry


def describe(obj: Any) -> dict[str, Any]:
    """The kind and signature of one public name: what a caller relies on."""
    if inspect.isclass(obj):
        return _describe_class(obj)
    if inspect.iscoroutinefunction(obj):
        return {"kind": "async function", "signature": _signature(obj)}
    if inspect.isfunction(obj):
        return {"kind": "function", "signature": _signature(obj)}
    if isinstance(obj, types.UnionType) or typing.get_origin(obj) is not None:
        return {"kind": "type alias", "value": _clean(str(obj))}
    if isinstance(obj, str | int | float | bool | type(None)):
        return {"kind": "constant", "type": type(obj).__name__, "value": repr(obj)}
    return {"kind": type(obj).__name__}


def public_api() -> dict[str, Any]:
    """{name: description} for every name in `tau_adapters.__all__`, sorted."""
    import tau_adapters

    names = sorted(tau_adapters.__all__)
    return {name: describe(getattr(tau_adapters, name)) for name in names}


def render(api: dict[str, Any]) -> str:
    return json.dumps(api, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    SNAPSHOT.write_text(render(public_api()), encoding="utf-8")
    print(f"wrote {SNAPSHOT} ({len(public_api())} names): review the diff, then commit it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
