"""`KEY=VALUE` flags of the adapters' commands (`--brain-option model=gpt-4o`).

One parser for all of them: the run configuration's (`tau_bench.config.parse_key_values`,
also behind `tau run --agent-option`), its error turned into the CLI's `UserError`, so a
bad item is one `error:` line and exit 2 wherever a command meets it.
"""

from __future__ import annotations

from collections.abc import Iterable

from tau_bench.cli.errors import UserError


def key_values(items: Iterable[str], flag: str) -> dict[str, str]:
    """`["model=gpt-4o", "api-base=http://h/v1"]` -> `{"model": "gpt-4o", "api_base":
    "http://h/v1"}`: keys stripped, `-` read as `_` (option names), values as written (the
    option's own check reads them). A later item wins over an earlier one with the same key.
    An item without `=` or without a key is a `UserError`: `FLAG expects KEY=VALUE, got
    'ITEM'`."""
    from tau_bench.config.layers import parse_key_values
    from tau_bench.config.run_config import RunConfigError

    try:
        return parse_key_values(list(items), flag)
    except RunConfigError as exc:
        raise UserError(str(exc)) from None
