"""Model calls for every local LLM user and agent, through litellm.

One job per module:

    runtime.py    litellm's process-wide settings (`configure_litellm`) and lazy import
    errors.py     the typed errors of a failed call
    retry.py      the one retry engine (`RetryPolicy`, `call_with_retries`, `RetryRecord`)
    config.py     `LLMConfig` and the default retry policy
    classify.py   error typing, Retry-After, providers and missing API keys
    limits.py     provider concurrency caps
    clients.py    pooled httpx clients handed to litellm
    response.py   `Completion`: message, usage, cost; the reply check (`checked_reply`)
    wire.py       reply bodies bounded in size (decompressed too) and checked on the wire
    complete.py   `complete`, the call itself
    direct.py     the direct path: OpenAI-compatible calls on the `openai` client
    direct_clients.py  its pooled `AsyncOpenAI` clients

Importing this package has no side effects and does not import litellm (it takes
seconds); call `configure_litellm()` where a run starts.
"""

from tau_adapters.redaction import redact_text as redact  # the old name, kept for importers
from tau_bench.llm.classify import (
    KEY_PROVIDERS,
    RETRYABLE_STATUS,
    classify,
    missing_key,
    provider_of,
    retry_after,
)
from tau_bench.llm.clients import POOLED_PROVIDERS, SHARD_CALLS, client_counts
from tau_bench.llm.complete import complete
from tau_bench.llm.config import DEFAULT_RETRY, LLMConfig
from tau_bench.llm.direct import (
    LLM_PATHS,
    ToolSchemas,
    checked_llm_path,
    llm_path,
    run_llm_path,
    set_llm_path,
)
from tau_bench.llm.direct_clients import aclose_clients
from tau_bench.llm.errors import (
    LLMAuthError,
    LLMBadRequestError,
    LLMContextWindowError,
    LLMError,
    LLMMalformedReplyError,
    LLMRateLimitError,
    LLMReplyTooLargeError,
    LLMUnavailableError,
)
from tau_bench.llm.limits import provider_limits, set_provider_limits
from tau_bench.llm.response import Completion
from tau_bench.llm.retry import RetryPolicy, RetryRecord, call_with_retries
from tau_bench.llm.runtime import OPENAI_HANDLER_ENV, configure_litellm

__all__ = [
    "DEFAULT_RETRY",
    "KEY_PROVIDERS",
    "LLM_PATHS",
    "OPENAI_HANDLER_ENV",
    "POOLED_PROVIDERS",
    "RETRYABLE_STATUS",
    "SHARD_CALLS",
    "Completion",
    "LLMAuthError",
    "LLMBadRequestError",
    "LLMConfig",
    "LLMContextWindowError",
    "LLMError",
    "LLMMalformedReplyError",
    "LLMRateLimitError",
    "LLMReplyTooLargeError",
    "LLMUnavailableError",
    "RetryPolicy",
    "RetryRecord",
    "ToolSchemas",
    "aclose_clients",
    "call_with_retries",
    "checked_llm_path",
    "classify",
    "client_counts",
    "complete",
    "configure_litellm",
    "llm_path",
    "missing_key",
    "provider_limits",
    "provider_of",
    "redact",
    "retry_after",
    "run_llm_path",
    "set_llm_path",
    "set_provider_limits",
]
