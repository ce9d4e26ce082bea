"""One multi-turn conversation whose KV cache is carried from turn to turn
(several side by side: `llm.hf.decoding.ConversationBatch`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llm.hf.loading import LoadedModel, end_ids, generation_options


@dataclass
class Conversation:
    """A multi-turn conversation whose KV cache is carried from turn to turn:
    each turn's prompt extends the last one, so only the new part (the last
    answer and the next question) is computed. `carry=False` encodes every
    turn in full (the paper's way); greedy tokens are the same."""

    loaded: LoadedModel
    carry: bool = True
    ids: list[int] | None = None
    cache: Any = None  # a transformers Cache (DynamicCache)
    prefill_tokens: int = 0

    def turn(
        self,
        new_ids: list[int],
        *,
        max_tokens: int,
        seed: int | None = None,
        temperature: float = 0.0,
        top_p: float | None = None,
        top_k: int | None = None,
        repetition_penalty: float | None = None,
    ) -> tuple[list[int], str]:
        import torch

        self.ids = (self.ids or []) + new_ids
        input_ids = torch.tensor([self.ids], device=self.loaded.device)
        options = generation_options(
            self.loaded.tokenizer, max_tokens, temperature, top_p, top_k, repetition_penalty
        )
        options["return_dict_in_generate"] = True
        cached = self.cache.get_seq_length() if (self.carry and self.cache is not None) else 0
        with self.loaded.lock, torch.no_grad():
            if seed is not None:
                torch.manual_seed(seed)
            output = self.loaded.model.generate(
                input_ids,
                attention_mask=torch.ones_like(input_ids),
                past_key_values=self.cache if self.carry else None,
                **options,
            )
        self.prefill_tokens += len(self.ids) - cached
        new = [int(t) for t in output.sequences[0, len(self.ids) :]]
        if self.carry:
            # keep the prompt's keys and values only: the next prompt re-reads the
            # answer as text, as a restarted conversation would
            self.cache = output.past_key_values
            extra = self.cache.get_seq_length() - len(self.ids)
            if extra > 0:
                self.cache.crop(-extra)  # transformers 5 takes the number of tokens to drop
        stopped = new and new[-1] in end_ids(self.loaded)
        finish = "stop" if stopped or len(new) < max_tokens else "length"
        return new, finish
