"""An offline stand-in for the model, for tests and the throughput benchmark.

`FakeModel` answers the pipeline's prompts the way a competent model would, computing
its answers from what the prompt says (the sampled user's orders or reservations, the
alternatives and flights listed), and can be told to make specific mistakes (foreign
ids, unknown tools, malformed JSON, ...), so the pipeline's validation is exercised for
real. `tau_bench.fakes.OpenAIServer(model.respond)` serves it as an OpenAI-compatible
HTTP endpoint on 127.0.0.1.
"""

from tau_bench.sdg.fake.model import INSTRUCTION_FAULTS, SCENARIO_FAULTS, FakeModel

__all__ = ["INSTRUCTION_FAULTS", "SCENARIO_FAULTS", "FakeModel"]
