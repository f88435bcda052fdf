"""A2A (Agent2Agent protocol) adapter: hosted agents whose tool calls run on the local DB."""
