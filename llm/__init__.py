"""One way to call a language model, for generation and judging alike.

`llm.calls.ModelCaller` is the entry point: a request goes through the call
ledger (an identical request is answered from it), the run's rate limits and
the endpoint's in-flight gate, one retry policy and one circuit breaker, to a
provider (`llm.providers`: OpenAI-compatible servers or a local HF
transformers model); every answer and every final failure is an `LLMCall`.
The Batch API (`llm.batch`: submit, poll, collect) writes its answers into the same ledger.
Modelled on inspect_ai's `ModelAPI` (one interface, per-provider retry and
connection rules) and its cache policy.
"""
