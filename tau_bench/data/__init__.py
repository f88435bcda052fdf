"""Where the benchmark data lives, and how it gets there."""

from tau_bench.data.paths import DataDirError, resolve_data_dir

__all__ = ["DataDirError", "resolve_data_dir"]
