"""Local HF transformers models on a GPU worker: loading (`loading`), memory
planning (`memory`), shared-prefix batched decoding (`decoding`) and
multi-turn conversations (`conversations`). The model driver reaches them
through the local provider (`llm.providers.LocalHFModel`), like any other
model: every call in the ledger.

torch and transformers are imported where they are used, not here.
"""

from llm.hf.conversations import Conversation
from llm.hf.decoding import (
    BatchedDecoding,
    ConversationBatch,
    OnAnswer,
    PrefixRun,
    generate_ids,
    shared_prefix_generate,
)
from llm.hf.loading import (
    ATTENTION,
    DTYPES,
    HFModelSpec,
    LoadedModel,
    end_ids,
    generation_options,
    load_model,
    loaded_specs,
)
from llm.hf.memory import (
    MEMORY_HEADROOM,
    PromptOutOfMemory,
    free_memory_bytes,
    in_halving_batches,
    is_out_of_memory,
    kv_bytes_per_token,
    plan_batch_size,
)

__all__ = [
    "ATTENTION",
    "DTYPES",
    "MEMORY_HEADROOM",
    "BatchedDecoding",
    "Conversation",
    "ConversationBatch",
    "HFModelSpec",
    "LoadedModel",
    "OnAnswer",
    "PrefixRun",
    "PromptOutOfMemory",
    "end_ids",
    "free_memory_bytes",
    "generate_ids",
    "generation_options",
    "in_halving_batches",
    "is_out_of_memory",
    "kv_bytes_per_token",
    "load_model",
    "loaded_specs",
    "plan_batch_size",
    "shared_prefix_generate",
]
