"""Model backends. `hf` runs a local HF transformers model (GPU workers); LLM
judges use it through the same chat interface as OpenAI-compatible servers."""
