"""The Dialogflow CX adapter's harness: `tau dialogflow` commands and the gRPC emulator (may import tau_bench)."""
