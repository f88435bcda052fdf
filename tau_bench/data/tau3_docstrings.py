"""Google-style docstrings read the way τ³'s upstream reads its tool docstrings.

Upstream turns each tool's docstring into the tool description and the parameter
descriptions with the `docstring_parser` package (automatic style detection). Its tool
docstrings are Google style or plain text, so this reproduces those two cases — the
section titles, the indentation rules, how continuation lines of a parameter are joined —
and refuses the other styles (reST `:param:`, epydoc `@param`, numpydoc underlines)
instead of guessing: a wrong guess would only surface as a checksum mismatch later.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

__all__ = ["DocstringError", "ParsedDocstring", "parse_docstring"]


class DocstringError(ValueError):
    """A docstring in a style this reader does not reproduce."""


@dataclass(frozen=True)
class DocParam:
    """One entry of an `Args:` section."""

    name: str
    description: str
    type_name: str | None = None


@dataclass(frozen=True)
class ParsedDocstring:
    """What the tool schema needs from a docstring."""

    short: str | None = None
    long: str | None = None
    params: tuple[DocParam, ...] = field(default_factory=tuple)


# Title -> kind: "multi" (one `name: text` entry per line at the section's indent) or
# "single" (the whole section is one entry).
_SECTIONS = {
    "Arguments": "multi",
    "Args": "multi",
    "Parameters": "multi",
    "Params": "multi",
    "Raises": "multi",
    "Exceptions": "multi",
    "Except": "multi",
    "Attributes": "multi",
    "Example": "single",
    "Examples": "single",
    "Returns": "single",
    "Yields": "single",
}
_PARAM_TITLES = frozenset({"Arguments", "Args", "Parameters", "Params"})
_TITLE = re.compile(
    "^(" + "|".join(f"({t})" for t in _SECTIONS) + "):[ \t\r\f\v]*$", flags=re.MULTILINE
)
_TYPED_NAME = re.compile(r"\s*(.+?)\s*\(\s*(.*[^\s]+)\s*\)")
_OTHER_STYLES = re.compile(r"^(:|@\w|-{3,}\s*$)", flags=re.MULTILINE)


def _split_description(text: str) -> tuple[str | None, str | None]:
    parts = text.split("\n", 1)
    short = parts[0] or None
    long = (parts[1].strip() or None) if len(parts) > 1 else None
    return short, long


def _entry(text: str, title: str) -> DocParam | None:
    """One section entry; a `DocParam` for argument sections, else None."""
    if ":" not in text:
        raise DocstringError(f"expected a colon in {text!r}")
    before, desc = text.split(":", 1)
    if desc:
        desc = desc[1:] if desc[0] == " " else desc
        if "\n" in desc:
            first, rest = desc.split("\n", 1)
            desc = first + "\n" + inspect.cleandoc(rest)
        desc = desc.strip("\n")
    if title not in _PARAM_TITLES:
        return None
    typed = _TYPED_NAME.match(before)
    if typed is None:
        return DocParam(before, desc)
    name, type_name = typed.group(1, 2)
    for suffix in (", optional", "?"):
        if type_name.endswith(suffix):
            type_name = type_name[: -len(suffix)]
            break
    return DocParam(name, desc, type_name)


def _google(text: str) -> ParsedDocstring:
    first = _TITLE.search(text)
    desc_chunk, meta = (text[: first.start()], text[first.start() :]) if first else (text, "")
    short, long = _split_description(desc_chunk)
    titles = list(_TITLE.finditer(meta))
    chunks: dict[str, str] = {}
    for i, match in enumerate(titles):
        end = titles[i + 1].start() if i + 1 < len(titles) else len(meta)
        details = meta[match.end() : end]
        outdented = re.search(r"\n\S", details)
        if outdented is not None:
            details = details[: outdented.start()]
        chunks[match.group(1)] = details.strip("\n")
    params: list[DocParam] = []
    for title, chunk in chunks.items():
        if _SECTIONS[title] != "multi":  # one entry that cannot fail to parse
            continue
        indent = re.match(r"\s*", chunk)
        starts = list(
            re.finditer(
                "^" + re.escape(indent.group() if indent else "") + r"(?=\S)",
                chunk,
                flags=re.MULTILINE,
            )
        )
        if not starts:
            raise DocstringError(f"no entries under {title!r}")
        for j, start in enumerate(starts):
            stop = starts[j + 1].start() if j + 1 < len(starts) else len(chunk)
            entry = _entry(chunk[start.end() : stop].strip("\n"), title)
            if entry is not None:
                params.append(entry)
    return ParsedDocstring(short, long, tuple(params))


def parse_docstring(raw: str | None) -> ParsedDocstring:
    """Short and long description and `Args:` entries of a raw (uncleaned) docstring.

    A Google docstring whose sections do not parse falls back, as upstream's automatic
    detection does, to a plain description with no parameter entries.
    """
    if not raw:
        return ParsedDocstring()
    text = inspect.cleandoc(raw)
    if _OTHER_STYLES.search(text):
        raise DocstringError("only Google-style and plain docstrings are read")
    try:
        return _google(text)
    except DocstringError:
        short, long = _split_description(text)
        return ParsedDocstring(short, long)
