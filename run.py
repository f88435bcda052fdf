"""τ-bench's `python run.py ...`, kept for compatibility: identical to `tau run ...`."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

if __name__ == "__main__":
    from tau_bench.cli.run_cmd import main

    sys.exit(main())
