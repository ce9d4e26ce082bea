"""Memory on the device: how many prompts decode together, and what running
out of it means (halve the batch; a prompt that does not fit alone is named).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

MEMORY_HEADROOM = 0.85  # of the free memory: the allocator's fragmentation, stray temporaries


class PromptOutOfMemory(RuntimeError):
    """Out of memory with one prompt alone: nothing smaller to try."""

    def __init__(self, prompt_tokens: int, error: BaseException) -> None:
        super().__init__(str(error))
        self.prompt_tokens = prompt_tokens


def is_out_of_memory(error: BaseException) -> bool:
    """torch.OutOfMemoryError (CUDA, MPS, XPU; torch.cuda.OutOfMemoryError is
    the same class), named here without importing torch."""
    return type(error).__name__ == "OutOfMemoryError"


@contextmanager
def out_of_memory_named(prompt_tokens: int) -> Iterator[None]:
    try:
        yield
    except Exception as error:
        if not is_out_of_memory(error):
            raise
        raise PromptOutOfMemory(prompt_tokens, error) from error


def kv_bytes_per_token(model) -> int:
    """Bytes of KV cache one token takes: layers x key/value heads x head
    dimension x 2 (a key and a value) x bytes per number."""
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else None
    config = config or model.config
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return config.num_hidden_layers * kv_heads * head_dim * 2 * model.dtype.itemsize


def free_memory_bytes(device: str) -> int:
    """Memory a batch may take on `device`: on CUDA what the driver reports free
    plus what torch's allocator holds unused; elsewhere the host's available
    memory (psutil)."""
    import torch

    if str(device).startswith("cuda"):
        free, _total = torch.cuda.mem_get_info(device)
        return int(free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))
    import psutil

    return int(psutil.virtual_memory().available)


def plan_batch_size(*, free_bytes: int, shared_bytes: int, row_bytes: int, cap: int) -> int:
    """As many rows as fit in `MEMORY_HEADROOM` of the free memory once the
    shared part is taken, at least 1 and at most `cap`."""
    usable = int(free_bytes * MEMORY_HEADROOM) - shared_bytes
    return max(1, min(cap, usable // max(row_bytes, 1)))


def in_halving_batches(
    items: list[T],
    batch_size: int,
    run: Callable[[list[T]], None],
    *,
    pending: Callable[[T], bool],
    prompt_tokens: Callable[[T], int],
) -> list[int]:
    """Run `items` through `run` in batches of `batch_size`; out of memory
    halves the batch and goes on with what is still pending (what a failed
    batch finished before failing is kept). Out of memory with a batch of one
    raises PromptOutOfMemory naming that prompt's length. Returns the sizes of
    the batches run."""
    sizes: list[int] = []
    todo = [item for item in items if pending(item)]
    while todo:
        batch = todo[:batch_size]
        sizes.append(len(batch))
        try:
            run(batch)
        except Exception as error:
            if not is_out_of_memory(error) or isinstance(error, PromptOutOfMemory):
                raise
            _release_memory()
            if len(batch) == 1:
                raise PromptOutOfMemory(prompt_tokens(batch[0]), error) from error
            batch_size = max(1, len(batch) // 2)
        else:
            if all(pending(item) for item in batch):  # a bug, not a loop without end
                raise RuntimeError("A batch ran without finishing any of its prompts.")
        todo = [item for item in todo if pending(item)]
    return sizes


def cut_cache(cache, length: int) -> None:
    """Cut every layer of a DynamicCache back to `length` positions (a step that
    failed part-way may have grown only some layers)."""
    layers = getattr(cache, "layers", None)
    if layers is None:  # transformers 4: crop takes the length to keep
        if cache.get_seq_length() > length:
            cache.crop(length)
        return
    for layer in layers:
        extra = layer.get_seq_length() - length
        if extra > 0:
            layer.crop(-extra)


def _release_memory() -> None:
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
