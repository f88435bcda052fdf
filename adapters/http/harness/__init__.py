"""The HTTP adapter's harness: `tau http` commands and the reference bot (may import tau_bench)."""
