"""YAML and JSON parsing that refuses a mapping holding the same key twice.

Why: PyYAML and `json` keep the last of two equal keys without a word, so a config
whose user appended a second `headers:` block (to add one header) silently loses the
first block's `Authorization`, and the bot answers 401 for a reason no message names.
YAML merge keys (`<<: *base`) still override as YAML says: only keys written twice in
one mapping are refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import yaml

__all__ = ["DuplicateKeyError", "load_json", "load_yaml"]


class DuplicateKeyError(ValueError):
    """A mapping holds `key` twice; `line` (1-based) is the second one's, when known."""

    def __init__(self, key: Any, line: int | None = None) -> None:
        where = f" (line {line})" if line is not None else ""
        super().__init__(f"key {key!r} appears twice in one mapping{where}")
        self.key = key
        self.line = line


class _UniqueKeyLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that raises `DuplicateKeyError` on a key written twice."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Iterator[Any]:
    """SafeLoader's own mapping constructor (a generator, so anchors work as before),
    after checking the keys written in this mapping."""
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
            continue  # merge keys, and keys SafeLoader refuses by itself
        key = loader.construct_object(key_node)
        if key in seen:
            raise DuplicateKeyError(key, key_node.start_mark.line + 1)
        seen.add(key)
    yield from loader.construct_yaml_map(node)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,  # type: ignore[arg-type]
)


def load_yaml(text: str) -> Any:
    """`yaml.safe_load`, refusing duplicate keys."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader: no arbitrary objects


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


def load_json(text: str) -> Any:
    """`json.loads`, refusing duplicate keys."""
    return json.loads(text, object_pairs_hook=_pairs)
