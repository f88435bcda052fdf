"""A local Dialogflow CX gRPC emulator backed by any local agent (the "brain").

`tau dialogflow emulate` runs it; tests start `Emulator` in-process on an ephemeral port.
"""

from adapters.dialogflow.harness.emulator.faults import FaultPlan, FaultSpecError
from adapters.dialogflow.harness.emulator.server import Emulator

__all__ = ["Emulator", "FaultPlan", "FaultSpecError"]
