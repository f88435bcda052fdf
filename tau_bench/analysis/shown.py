"""Text from a results file as the readers show or write it (`tau view`, the report's
trajectories, the MT-bench export, `tau rescore`): secrets masked, long text clipped,
tool-call arguments decoded with a bound.

A results file is untrusted input: it may come from another harness or a published
trajectory set, never masked, and any field may be as long or as deeply nested as a
hostile or broken writer made it. So:

* `masked` applies `tau_adapters.redaction.redact_text` (known key shapes, `Bearer ...`,
  secret-named environment values), as `tau analyze` does for what it writes;
* `clip` keeps a message to `MAX_SHOWN_CHARS` characters and `MAX_SHOWN_LINES` lines
  and says what it left out (`[... 2,000 more lines]`): one 3 MB message no longer costs
  a minute and a gigabyte to lay out;
* `decode_arguments` decodes a JSON-string argument with the project's bounded decoder
  (`tau_bench.json_decode`): nesting deeper than `jsonsafe.MAX_DEPTH` or an integer
  too long to convert is not decoded, and the caller shows (or passes on) the text.
"""

from __future__ import annotations

import json
from typing import Any

from tau_adapters.jsonsafe import MAX_DEPTH, depth_exceeds, map_leaves
from tau_adapters.redaction import redact_text
from tau_bench.json_decode import loads

MAX_SHOWN_CHARS = 20_000
"""Most characters of one message (instruction, tool arguments, error) shown or written
to a report; what follows is replaced by a `[... N more characters]` marker."""

MAX_SHOWN_LINES = 500
"""Most lines of one message shown; the rest is a `[... N more lines]` marker."""

MAX_PROMPT_CHARS = 200_000
"""Most characters (and lines) of a system prompt shown in full (`tau view --system`, the
report's prompt of each run): the domains' policies are about 10,000."""


def masked(text: str) -> str:
    """`text` with secrets masked (`***`): key shapes, bearer tokens, environment secrets."""
    return redact_text(text)


def clip(text: str, max_chars: int = MAX_SHOWN_CHARS, max_lines: int = MAX_SHOWN_LINES) -> str:
    """`text` cut to `max_chars` characters and `max_lines` lines, ending in a marker that
    says how much was left out; `text` itself when it fits."""
    if len(text) <= max_chars and text.count("\n", 0, max_chars + 1) < max_lines:
        return text
    head = text[:max_chars]
    lines = head.split("\n", max_lines)
    if len(lines) > max_lines:  # cut by lines
        head = "\n".join(lines[:max_lines])
        rest = text.count("\n", len(head) + 1) + (not text.endswith("\n"))
        return f"{head}\n[... {rest:,} more lines]"
    return f"{head}[... {len(text) - len(head):,} more characters]"


def shown(text: str, max_chars: int = MAX_SHOWN_CHARS, max_lines: int = MAX_SHOWN_LINES) -> str:
    """`text` masked, then clipped (masked first: a key cut in two would not be found)."""
    return clip(masked(text), max_chars, max_lines)


def prompt_shown(text: str) -> str:
    """A system prompt as shown in full: masked, clipped at `MAX_PROMPT_CHARS`."""
    return shown(text, MAX_PROMPT_CHARS, MAX_PROMPT_CHARS)


def decode_arguments(raw: Any) -> tuple[Any, bool]:
    """Tool-call arguments as a value: `(value, True)`, a JSON string decoded ("" is
    `{}`); `(text, False)` for a string that does not decode — bad syntax, nested deeper
    than `MAX_DEPTH` levels, an integer too long to convert (a value already decoded that
    nests that deep is `(value, False)`)."""
    if not isinstance(raw, str):
        return raw, not depth_exceeds(raw, MAX_DEPTH)
    if not raw.strip():
        return {}, True
    try:
        value = loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return raw, False
    if depth_exceeds(value, MAX_DEPTH):
        return raw, False
    return value, True


def arguments_text(raw: Any) -> str:
    """Tool-call arguments for a reader: compact JSON, or the text as it was when it does
    not decode; masked and clipped."""
    value, ok = decode_arguments(raw)
    if ok:
        text = json.dumps(value, ensure_ascii=False, default=str)
    else:
        text = value if isinstance(value, str) else "<arguments nested too deep to show>"
    return shown(text)


def value_text(value: Any) -> str:
    """A JSON value from a record (a DB diff's field, expected-action kwargs) as compact
    JSON, masked and clipped; a value nested deeper than `MAX_DEPTH` levels is named, not
    walked."""
    if isinstance(value, dict | list) and depth_exceeds(value, MAX_DEPTH):
        return f"<a value nested deeper than {MAX_DEPTH} levels>"
    return shown(json.dumps(value, ensure_ascii=False, default=str))


def masked_value(value: Any) -> Any:
    """A copy of a JSON value with every string in it masked (`masked`); keys are kept.
    Iterative, so a value nested as deep as the decoder allowed is copied, not refused."""
    return map_leaves(value, lambda item: masked(item) if isinstance(item, str) else item)
