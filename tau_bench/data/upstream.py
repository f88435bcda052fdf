"""The pinned upstream release the data cache is filled from."""

from __future__ import annotations

UPSTREAM_REPO = "sierra-research/tau-bench"
PINNED_COMMIT = "59a200c6d575d595120f1cb70fea53cef0632f6b"
