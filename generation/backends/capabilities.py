"""What each kind of OpenAI-compatible server accepts besides temperature and
max_tokens. Shared by generation and LLM judges: a configuration that needs a
parameter its server refuses is refused itself, never silently dropped.
(OpenAI: no top_k / repetition_penalty; vLLM and llama.cpp take them as extra
body fields; TGI's and Ollama's OpenAI routes take seed and top_p.)"""

CAPABILITIES: dict[str, dict[str, bool]] = {
    "openai": {"seed": True, "top_p": True, "repetition_penalty": False, "top_k": False},
    "vllm": {"seed": True, "top_p": True, "repetition_penalty": True, "top_k": True},
    "tgi": {"seed": True, "top_p": True, "repetition_penalty": False, "top_k": False},
    "ollama": {"seed": True, "top_p": True, "repetition_penalty": False, "top_k": False},
    "llamacpp": {"seed": True, "top_p": True, "repetition_penalty": True, "top_k": True},
    # a local HF transformers model on a GPU worker (generation.backends.hf)
    "hf": {"seed": True, "top_p": True, "repetition_penalty": True, "top_k": True},
}
