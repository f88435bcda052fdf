"""Dialogflow CX ("decibel") adapter, its local gRPC emulator, and agent provisioning."""
