from tests.tau_bench.agents.fake_llm import fake_llm

__all__ = ["fake_llm"]
