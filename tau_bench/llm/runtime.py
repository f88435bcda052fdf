"""litellm as a process-wide dependency: its settings, set once, and its lazy import.

Nothing here runs at import. `configure_litellm()` is called where a run starts (the
`tau` and `run.py` entry points, the runner, benchmarks); `litellm()` calls it too, so a
library user who never called it still gets the local price map (litellm would otherwise
fetch it from the internet at import), litellm's own OpenAI HTTP handler, and replies
bounded in size whichever client litellm reads them with (`tau_bench.llm.wire`).
"""

from __future__ import annotations

import gc
import os
from typing import Any

COST_MAP_ENV = "LITELLM_LOCAL_MODEL_COST_MAP"
"""True: litellm reads the price map shipped with it instead of fetching it at import."""

OPENAI_HANDLER_ENV = "EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER"
"""True: OpenAI chat calls go through litellm's own HTTP handler (the same transforms as
its openai-SDK route, without the SDK's per-call TypedDict walk of the whole body). Set it
to False in the environment to go back to the SDK route."""

LOG_LEVEL_ENV = "LITELLM_LOG"
"""The level of litellm's own log handler, read at its import. CRITICAL by default: every
failure litellm logs also reaches us as an exception, which the harness reports in one
line (classified, redacted); litellm's log of it is a second copy, with a traceback, on
stderr (a missing Google credential printed 25 lines before the pre-flight's one). Set
`LITELLM_LOG=DEBUG` to see litellm's log when debugging a provider."""

_configured = False
_module: Any = None


def configure_litellm() -> None:
    """Set litellm's process-wide options (environment defaults: a value the user set
    wins). Idempotent; call it once where a run starts, before litellm is imported."""
    global _configured
    if _configured:
        return
    os.environ.setdefault(COST_MAP_ENV, "True")
    os.environ.setdefault(OPENAI_HANDLER_ENV, "True")
    os.environ.setdefault(LOG_LEVEL_ENV, "CRITICAL")
    _configured = True


def litellm() -> Any:
    """The litellm module, imported on first use (it takes seconds), quiet, on httpx.

    The first call also bounds the replies litellm's own HTTP clients read
    (`wire.bound_litellm_clients`) and freezes the objects alive then
    (`freeze_long_lived`)."""
    global _module
    module = _module
    if module is None:
        configure_litellm()
        import litellm as module

        from tau_bench.llm.wire import bound_litellm_clients

        bound_litellm_clients(module)
        freeze_long_lived()
        _module = module
    module.suppress_debug_info = True
    module.disable_aiohttp_transport = True
    return module


def freeze_long_lived() -> None:
    """Collect, then move every object alive to the collector's permanent generation.

    Importing litellm (and loading a domain) leaves ~300,000 objects that live as long
    as the process; each full collection during a run would traverse them all again
    (~0.2 s each, ~12 % of a run's CPU on the direct path). Frozen objects are still
    freed by reference counting; only cycles among them are never collected."""
    gc.collect()
    gc.freeze()


def openai_via_handler() -> bool:
    """Whether OpenAI calls use litellm's HTTP handler (and so our pooled clients)."""
    return os.environ.get(OPENAI_HANDLER_ENV, "").strip().lower() in ("1", "true", "yes", "on")
