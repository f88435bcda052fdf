"""Runner benchmark: how close does `tau run` get to the latency bound of its model calls?

The fake OpenAI-compatible server (`tau_bench.fakes`, in a child process so it does not
share the runner's event loop or CPU) answers /v1/chat/completions a fixed latency after
each request arrives, with scripted turns (`replies`): the agent calls one tool, then
talks; the user greets, thanks, then sends ###STOP###. That is 6 sequential model calls
per episode. The real tool-calling agent and LLM user (`tau_bench.llm`, litellm) are
pointed at it with `api_base`, and N airline episodes run at each concurrency level
through `tau run`'s runner (results files written and fsynced as usual).

The bound is calls/episode x latency x episodes / concurrency (no runner can beat it);
with identical episodes the last wave cannot be shared, so the "wave bound"
ceil(episodes / concurrency) x calls/episode x latency is reported too.

    tau bench runner                    # levels 1:20, 50:500, 200:500
    tau bench runner --levels 200:500 --stack litellm
    tau bench runner --episodes 100

Modules: replies (the scripted model), raw_stack (the runner without a model client),
measure (one level in this process), levels (levels, processes, the whole benchmark),
render (tables, `--levels`), __main__ (the command line).
"""

from tau_bench.benchmarks.runner.levels import (
    ALL_STACKS,
    BACKENDS,
    DEFAULT_LATENCY,
    DEFAULT_LEVELS,
    STACK_HELP,
    STACKS,
    run_runner_benchmark,
)
from tau_bench.benchmarks.runner.measure import DEFAULT_MODEL, PeakRSS, Setup
from tau_bench.benchmarks.runner.render import (
    COLUMNS,
    markdown,
    parse_levels,
    parse_workers,
    render,
    scaling_lines,
)

__all__ = [
    "ALL_STACKS",
    "BACKENDS",
    "COLUMNS",
    "DEFAULT_LATENCY",
    "DEFAULT_LEVELS",
    "DEFAULT_MODEL",
    "STACKS",
    "STACK_HELP",
    "PeakRSS",
    "Setup",
    "markdown",
    "parse_levels",
    "parse_workers",
    "render",
    "run_runner_benchmark",
    "scaling_lines",
]
