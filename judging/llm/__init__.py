"""LLM judges behind any OpenAI-compatible server: typed configuration, the
client with retries and rate limits, the call ledger, and the run executor."""
