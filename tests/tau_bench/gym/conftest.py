from tests.tau_bench.agents.fake_llm import fake_llm, llm_env

__all__ = ["fake_llm", "llm_env"]
