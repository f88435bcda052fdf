"""τ-bench's `python run.py ...`, kept for compatibility: identical to `tau run ...`."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    from tau_bench.cli.run_cmd import main
    from tau_bench.llm.runtime import configure_litellm

    configure_litellm()
    sys.exit(main())
