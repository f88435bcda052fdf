"""Dialogflow CX ("decibel") adapter, its local gRPC emulator, and agent provisioning."""

from tau_adapters.extras import require

require("dialogflow")
