"""Benchmark-side A2A pieces: the reference agent (oracle or LLM brain) and `tau a2a`."""
