"""A local CES gRPC service answered by any local agent (the oracle by default)."""

from adapters.ces.harness.emulator.faults import FaultPlan, FaultSpecError
from adapters.ces.harness.emulator.server import Emulator

__all__ = ["Emulator", "FaultPlan", "FaultSpecError"]
