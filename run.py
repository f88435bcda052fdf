"""τ-bench's `python run.py ...`, kept for compatibility: identical to `tau run ...`."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    from tau_bench.cli.plugin_metadata import check_plugin_metadata

    check_plugin_metadata()  # before any pydantic model exists

    from tau_bench.cli.run_cmd import main
    from tau_bench.llm.runtime import configure_litellm

    configure_litellm()
    sys.exit(main())
