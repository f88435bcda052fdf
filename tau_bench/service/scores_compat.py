"""`GET /scores`: the MT-bench service's request spelling and its honest failure.

The seed service names the model `provider_model` (`openai_gpt-4o`), since a `/` does
not survive its file names; here that becomes provider `openai`, model `gpt-4o`. A run
that did not score every episode is not a result: the endpoint answers 502 with the
reason, never a 200 whose scores hide the failure as a 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cache

from tau_bench.records import EpisodeRecord


@cache
def _providers() -> tuple[str, ...]:
    """litellm's provider names, longest first (`vertex_ai` before `vertex`)."""
    import litellm

    names = {str(getattr(p, "value", p)) for p in litellm.provider_list}
    return tuple(sorted(names, key=len, reverse=True))


def split_model(model: str, providers: Iterable[str] | None = None) -> tuple[str | None, str]:
    """`(provider, model)` of a `/scores` model: `openai_gpt-4o` -> `("openai", "gpt-4o")`.

    A name with a `/` is litellm's own spelling and is kept (`(None, "openai/gpt-4o")`:
    the run takes the provider from its prefix); so is a name whose part before an `_`
    is no known provider (`my_bot` -> `(None, "my_bot")`).
    """
    text = model.strip()
    if "/" in text:
        return None, text
    for name in providers if providers is not None else _providers():
        if text.startswith(name + "_") and len(text) > len(name) + 1:
            return name, text[len(name) + 1 :]
    return None, text


def failure_reason(records: Sequence[EpisodeRecord]) -> str | None:
    """Why a finished run's scores are not a result (None when every episode scored):
    nothing finished, or which episodes errored and the most frequent error."""
    if not records:
        return "no episode finished"
    errored = [r for r in records if r.is_error]
    if not errored:
        return None
    counts = Counter(
        f"{(r.error or {}).get('kind', 'error')}: {(r.error or {}).get('message', '')}"
        for r in errored
    )
    top, n = counts.most_common(1)[0]
    more = f" (and {len(counts) - 1} other error(s))" if len(counts) > 1 else ""
    return f"{len(errored)} of {len(records)} episode(s) errored, not scored; {n} x {top}{more}"
