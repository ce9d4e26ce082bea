"""Decoding several prompts together, each choosing its tokens as generate()
would alone (`BatchedDecoding`): prompts that share a prefix (a meeting's
transcript, the prefix computed once), and conversations side by side, each
with its own KV cache carried from turn to turn (`ConversationBatch`, the
padded layout).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from llm.hf.loading import LoadedModel, end_ids, generation_options
from llm.hf.memory import (
    cut_cache,
    free_memory_bytes,
    in_halving_batches,
    kv_bytes_per_token,
    out_of_memory_named,
    plan_batch_size,
)

if TYPE_CHECKING:  # torch is imported where a model is used, not at start-up
    import torch


@dataclass
class PrefixRun:
    """What a shared-prefix generation did: the new tokens per suffix, the
    number of prompt tokens the model actually computed (its prefill), and the
    sizes of the batches it decoded (halved after running out of memory)."""

    outputs: list[list[int]]
    finish_reasons: list[str]
    prefill_tokens: int
    batch_sizes: list[int] = field(default_factory=list)


# (index of the prompt, its new token ids, its finish reason), called as soon as
# that prompt's answer is complete, while the others may still be decoding
OnAnswer = Callable[[int, list[int], str], None]


def generate_ids(
    loaded: LoadedModel,
    input_ids,
    *,
    max_tokens: int,
    past_key_values=None,
    seed: int | None = None,
    temperature: float = 0.0,
    top_p: float | None = None,
    top_k: int | None = None,
    repetition_penalty: float | None = None,
) -> tuple[list[int], str]:
    """New token ids for `input_ids` (1 x n), optionally continuing a KV cache
    that holds a prefix of them."""
    import torch

    options = generation_options(
        loaded.tokenizer, max_tokens, temperature, top_p, top_k, repetition_penalty
    )
    with torch.no_grad():
        if seed is not None:
            torch.manual_seed(seed)
        output = loaded.model.generate(
            input_ids,
            attention_mask=torch.ones_like(input_ids),
            past_key_values=past_key_values,
            **options,
        )
    new = [int(t) for t in output[0, input_ids.shape[1] :]]
    finish = "stop" if (new and new[-1] in end_ids(loaded)) or len(new) < max_tokens else "length"
    return new, finish


def prefix_cache(loaded: LoadedModel, prefix) -> Any:
    """The KV cache of `prefix` (1 x n ids), computed once. Only the last
    position's logits are made: the others are never read, and over a
    16.6K-token transcript they were a vocabulary-wide matrix per token."""
    import torch

    with torch.no_grad():
        return loaded.model(prefix, use_cache=True, logits_to_keep=1).past_key_values


def shared_prefix_generate(
    loaded: LoadedModel,
    prefix_ids: list[int],
    suffixes: list[list[int]],
    *,
    max_tokens: int,
    seed: int | None = None,
    temperature: float = 0.0,
    top_p: float | None = None,
    top_k: int | None = None,
    repetition_penalty: float | None = None,
    use_cache: bool = True,
    max_batch_size: int = 1,
    on_answer: OnAnswer | None = None,
    layout: str | None = None,
) -> PrefixRun:
    """Answer several prompts that share `prefix_ids` (the transcript part of
    single-turn prompts). With `use_cache` the prefix is computed once; with
    `max_batch_size` 1 each prompt then continues a copy of its KV cache, one
    after another, and with more the prompts are decoded together, up to as
    many at once as fit in memory (`BatchedDecoding`). Without `use_cache`
    every prompt is encoded in full, as the paper's scripts do. Greedy outputs
    are identical every way. `on_answer` hears of each answer as it is done."""
    import copy

    import torch

    if use_cache and prefix_ids and max_batch_size > 1 and len(suffixes) > 1:
        return BatchedDecoding(
            loaded,
            max_tokens=max_tokens,
            seed=seed,
            temperature=temperature,
            top_p=top_p,
            top_k=top_k,
            repetition_penalty=repetition_penalty,
        ).shared_prefix(prefix_ids, suffixes, max_batch_size, on_answer, layout)
    device = loaded.device
    prefix = torch.tensor([prefix_ids], device=device)
    outputs, finishes, prefill = [], [], 0
    with loaded.lock:
        cache = None
        if use_cache:
            cache = prefix_cache(loaded, prefix)
            prefill += len(prefix_ids)
        for index, suffix in enumerate(suffixes):
            full = torch.tensor([prefix_ids + suffix], device=device)
            with out_of_memory_named(len(prefix_ids) + len(suffix)):
                new, finish = generate_ids(
                    loaded,
                    full,
                    max_tokens=max_tokens,
                    seed=seed,
                    temperature=temperature,
                    top_p=top_p,
                    top_k=top_k,
                    repetition_penalty=repetition_penalty,
                    past_key_values=copy.deepcopy(cache) if use_cache else None,
                )
            prefill += len(suffix) if use_cache else len(prefix_ids) + len(suffix)
            outputs.append(new)
            finishes.append(finish)
            if on_answer is not None:
                on_answer(index, new, finish)
    return PrefixRun(outputs, finishes, prefill, [1] * len(suffixes))


@dataclass
class _Row:
    index: int  # the caller's
    ids: Any  # 1-D tensor of the prompt's ids, then the new ones (for the logits processors)
    position: int  # the position id of the next token fed
    generator: Any  # torch.Generator when sampling with a seed
    new: list[int] = field(default_factory=list)


class BatchedDecoding:
    """Several prompts decoded together, each choosing its tokens as
    generate() would alone: the model's generation config with these options,
    the same logits processors (built by transformers itself), greedy or
    sampled (with a seed, each prompt draws from its own generator seeded with
    it, as a lone generate() after torch.manual_seed does), stopping on the
    config's end-of-sequence ids or after max_tokens.

    Two layouts of the KV cache:
    - packed (single-turn, attention `sdpa` or `eager`, no sliding window):
      the shared prefix is stored once and every prompt's own tokens are
      appended to the same sequence of batch size 1; a 4-D attention mask lets
      each token see the prefix and its own prompt's earlier tokens only, and
      position ids number each prompt's tokens on from the prefix. A decoding
      step reads the prefix once for all prompts (the Hydragen idea with
      transformers' own custom-mask support), and the cache grows by the
      prompts' own tokens only.
    - padded (multi-turn, or another attention): one row per conversation in a
      batched cache, each turn's new tokens padded on the left and the padding
      masked (transformers builds the 4-D mask from the 2-D one)."""

    def __init__(
        self,
        loaded: LoadedModel,
        *,
        max_tokens: int,
        seed: int | None = None,
        temperature: float = 0.0,
        top_p: float | None = None,
        top_k: int | None = None,
        repetition_penalty: float | None = None,
    ) -> None:
        from transformers import LogitsProcessorList

        self.loaded = loaded
        self.max_tokens = max_tokens
        self.seed = seed
        options = generation_options(
            loaded.tokenizer, max_tokens, temperature, top_p, top_k, repetition_penalty
        )
        self.pad = options["pad_token_id"]
        model = loaded.model
        # generate()'s own steps: its configuration (model defaults, then these
        # options) and its logits processors, so that nothing differs
        config, _ = model._prepare_generation_config(None, **options)
        self.processors = model._get_logits_processor(
            generation_config=config,
            input_ids_seq_length=1,
            encoder_input_ids=None,
            prefix_allowed_tokens_fn=None,
            logits_processor=LogitsProcessorList(),
            device=loaded.device,
            model_kwargs={},
        )
        self.sample = bool(config.do_sample)
        eos = config.eos_token_id
        # generate() stops on the config's ids; a finish is "stop" on any end id
        self.eos = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
        self.ends = end_ids(loaded)
        self.kv_per_token = kv_bytes_per_token(model)

    # -- choosing tokens --

    def _row(self, index: int, ids: list[int], position: int) -> _Row:
        import torch

        generator = None
        if self.sample and self.seed is not None:
            generator = torch.Generator(device=self.loaded.device)
            generator.manual_seed(self.seed)
        tensor = torch.tensor(ids, device=self.loaded.device) if self.processors else None
        return _Row(index, tensor, position, generator)

    def _choose(self, rows: list[_Row], logits) -> list[int]:
        """The next token of each row from its logits (rows x vocabulary)."""
        import torch

        logits = logits.to(dtype=torch.float32)
        if not self.processors and not self.sample:
            return logits.argmax(-1).tolist()
        chosen = []
        for row, scores in zip(rows, logits, strict=True):
            scores = scores[None]
            if self.processors:  # each row with its own ids: no padding reaches them
                scores = self.processors(row.ids[None], scores)
            if self.sample:
                probabilities = torch.nn.functional.softmax(scores, dim=-1)
                token = torch.multinomial(probabilities, 1, generator=row.generator)
            else:
                token = scores.argmax(-1)
            chosen.append(int(token.reshape(())))
        return chosen

    def _advance(self, rows: list[_Row], logits, on_answer: OnAnswer) -> list[_Row]:
        """Give each row its next token; report and drop the rows that are done."""
        import torch

        live = []
        for row, token in zip(rows, self._choose(rows, logits), strict=True):
            row.new.append(token)
            if row.ids is not None:
                row.ids = torch.cat([row.ids, row.ids.new_tensor([token])])
            if token in self.eos or len(row.new) >= self.max_tokens:
                stopped = token in self.ends or len(row.new) < self.max_tokens
                finish = "stop" if stopped else "length"
                on_answer(row.index, list(row.new), finish)
            else:
                live.append(row)
        return live

    def _mask(self, visible: torch.Tensor) -> torch.Tensor:
        """An additive 4-D mask (0 where visible, the dtype's minimum elsewhere),
        which both `sdpa` and `eager` attention take as it is."""
        import torch

        dtype = self.loaded.model.dtype
        mask = torch.zeros(visible.shape, dtype=dtype, device=visible.device)
        return mask.masked_fill_(~visible, torch.finfo(dtype).min)[None, None]

    # -- memory --

    def packs(self) -> bool:
        """Whether the packed layout applies: an attention that takes a custom
        4-D mask, and full attention in every layer."""
        config = self.loaded.model.config
        implementation = getattr(config, "_attn_implementation", "sdpa")
        layer_types = getattr(config, "layer_types", None) or ["full_attention"]
        return (
            implementation in ("sdpa", "eager")
            and not getattr(config, "sliding_window", None)
            and all(kind == "full_attention" for kind in layer_types)
        )

    def batch_size(
        self, *, shared_tokens: int, row_tokens: int, query_tokens: int, cap: int
    ) -> int:
        """Rows per batch from the KV cache each takes and the free memory.
        `shared_tokens`: the cache every row reads (already in memory, but one
        layer of it is copied as each step appends); `row_tokens`: the cache of
        one row of its own; `query_tokens`: the tokens one row computes at once
        (the mask row each needs over the shared part)."""
        model = self.loaded.model
        layers = model.config.get_text_config().num_hidden_layers
        vocabulary = model.config.get_text_config().vocab_size
        per_layer = self.kv_per_token // layers
        row = (
            self.kv_per_token * row_tokens
            + 2 * per_layer * row_tokens  # its share of a layer copied by an append
            + query_tokens * shared_tokens * model.dtype.itemsize  # its rows of the mask
            + 2 * 4 * vocabulary  # its logits in float32, and their processed copy
        )
        return plan_batch_size(
            free_bytes=free_memory_bytes(self.loaded.device),
            shared_bytes=2 * per_layer * shared_tokens,
            row_bytes=row,
            cap=cap,
        )

    # -- single-turn: one shared prefix --

    def shared_prefix(
        self,
        prefix_ids: list[int],
        suffixes: list[list[int]],
        max_batch_size: int,
        on_answer: OnAnswer | None = None,
        layout: str | None = None,
    ) -> PrefixRun:
        import torch

        layout = layout or ("packed" if self.packs() else "padded")
        if layout not in ("packed", "padded"):
            raise ValueError(f"layout {layout!r}: 'packed' or 'padded'.")
        outputs: list[list[int] | None] = [None] * len(suffixes)
        finishes = [""] * len(suffixes)
        prefill = [0]

        def answered(index: int, new: list[int], finish: str) -> None:
            outputs[index], finishes[index] = new, finish
            if on_answer is not None:
                on_answer(index, new, finish)

        longest = max(map(len, suffixes))
        with self.loaded.lock, torch.no_grad():
            prefix = torch.tensor([prefix_ids], device=self.loaded.device)
            with out_of_memory_named(len(prefix_ids) + longest):
                cache = prefix_cache(self.loaded, prefix)
            prefill[0] += len(prefix_ids)
            packed = layout == "packed"
            size = self.batch_size(
                shared_tokens=len(prefix_ids),
                row_tokens=longest + self.max_tokens + (0 if packed else len(prefix_ids)),
                query_tokens=longest if packed else 0,
                cap=max_batch_size,
            )

            def run(batch: list[int]) -> None:
                if packed:
                    prefill[0] += self._packed(cache, prefix_ids, batch, suffixes, answered)
                    return
                rows = ConversationBatch.from_prefix(self.loaded, cache, prefix_ids, len(batch))
                rows.turn([suffixes[i] for i in batch], self, answered, indexes=batch)
                prefill[0] += rows.prefill_tokens

            sizes = in_halving_batches(
                list(range(len(suffixes))),
                size,
                run,
                pending=lambda i: outputs[i] is None,
                prompt_tokens=lambda i: len(prefix_ids) + len(suffixes[i]),
            )
        return PrefixRun([o or [] for o in outputs], finishes, prefill[0], sizes)

    def _packed(
        self,
        cache,
        prefix_ids: list[int],
        batch: list[int],
        suffixes: list[list[int]],
        on_answer: OnAnswer,
    ) -> int:
        """Decode the prompts `batch` over the prefix held in `cache` (batch
        size 1); the cache is cut back to the prefix afterwards. Returns the
        prompt tokens computed."""
        import torch

        from llm.hf.reserved_cache import reserve_room

        device = self.loaded.device
        model = self.loaded.model
        start = len(prefix_ids)
        shared = -1  # the owner of the prefix's positions: every prompt sees them
        try:
            # every step appends in place: room for the prompts and their answers
            reserve_room(cache, start + sum(len(suffixes[i]) + self.max_tokens for i in batch))
            # every prompt's own tokens side by side after the prefix, computed at once
            ids = [token for i in batch for token in suffixes[i]]
            owner_of_new = torch.tensor(
                [row for row, i in enumerate(batch) for _ in suffixes[i]], device=device
            )
            positions = torch.tensor(
                [start + j for i in batch for j in range(len(suffixes[i]))], device=device
            )
            owners = torch.cat([torch.full((start,), shared, device=device), owner_of_new])
            keys = torch.arange(owners.numel(), device=device)
            queries = start + torch.arange(len(ids), device=device)
            visible = (owners == shared)[None, :] | (
                (owners[None, :] == owner_of_new[:, None]) & (keys[None, :] <= queries[:, None])
            )
            last = torch.cumsum(torch.tensor([len(suffixes[i]) for i in batch]), 0) - 1
            logits = model(
                input_ids=torch.tensor([ids], device=device),
                position_ids=positions[None],
                attention_mask=self._mask(visible),
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=last.to(device),
            ).logits[0]
            rows = [self._row(i, prefix_ids + suffixes[i], start + len(suffixes[i])) for i in batch]
            row_of = {i: row for row, i in enumerate(batch)}
            rows = self._advance(rows, logits, on_answer)
            while rows:
                # one new token per unfinished prompt, each seeing the prefix and its own
                mine = torch.tensor([row_of[row.index] for row in rows], device=device)
                owners = torch.cat([owners, mine])
                visible = (owners == shared)[None, :] | (owners[None, :] == mine[:, None])
                logits = model(
                    input_ids=torch.tensor([[row.new[-1] for row in rows]], device=device),
                    position_ids=torch.tensor([[row.position for row in rows]], device=device),
                    attention_mask=self._mask(visible),
                    past_key_values=cache,
                    use_cache=True,
                ).logits[0]
                for row in rows:
                    row.position += 1
                rows = self._advance(rows, logits, on_answer)
            return len(ids)
        finally:
            cut_cache(cache, start)


class ConversationBatch:
    """Conversations decoded side by side, each carrying its own KV cache: row
    r of one batched cache is conversation r's. Each `turn` takes every row's
    new prompt tokens (the last answer as text and the next question, or a
    whole prompt where the conversation starts again), padded on the left and
    the padding masked; the answers' own keys and values are dropped after the
    turn, as `Conversation` does, so the next prompt reads each answer as text.
    `carry=False` encodes every turn in full (the paper's way)."""

    def __init__(self, loaded: LoadedModel, rows: int, carry: bool = True) -> None:
        self.loaded = loaded
        self.carry = carry
        self.ids: list[list[int] | None] = [None] * rows
        self.cache: Any = None
        self.mask: Any = None  # rows x cached positions: 1 for a token, 0 for padding
        self.prefill_tokens = 0
        self.broken = False

    @classmethod
    def from_prefix(
        cls, loaded: LoadedModel, prefix_cache, prefix_ids: list[int], rows: int
    ) -> ConversationBatch:
        """Rows that all start with a computed prefix (copied once per row)."""
        import copy

        import torch

        batch = cls(loaded, rows)
        batch.cache = copy.deepcopy(prefix_cache)
        batch.cache.batch_repeat_interleave(rows)
        batch.ids = [list(prefix_ids) for _ in range(rows)]
        batch.mask = torch.ones((rows, len(prefix_ids)), dtype=torch.long, device=loaded.device)
        return batch

    def keep(self, rows: list[int]) -> None:
        """Only these rows go on (the others' conversations are over)."""
        import torch

        self.ids = [self.ids[r] for r in rows]
        if not rows:  # all over: nothing to keep
            self.cache, self.mask = None, None
        elif self.cache is not None:
            index = torch.tensor(rows, dtype=torch.long, device=self.loaded.device)
            self.cache.batch_select_indices(index)
            self.mask = self.mask[index]

    def turn(
        self,
        new_ids: list[list[int]],
        decoding: BatchedDecoding,
        on_answer: OnAnswer,
        *,
        restart: list[bool] | None = None,
        indexes: list[int] | None = None,
    ) -> None:
        """One turn of every row: `new_ids[r]` extends row r's prompt, or starts
        it again where `restart[r]`. Answers are reported as each is done,
        under `indexes[r]` (default r)."""
        import torch

        if self.broken:
            raise RuntimeError("This conversation batch failed before: start a new one.")
        device = self.loaded.device
        rows = len(new_ids)
        indexes = indexes or list(range(rows))
        restart = restart or [False] * rows
        for r, new in enumerate(new_ids):
            again = restart[r] or self.ids[r] is None
            if again and self.mask is not None:
                self.mask[r] = 0  # its earlier keys and values are no longer read
            self.ids[r] = list(new) if again else (self.ids[r] or []) + list(new)
        fed: list[list[int]] = list(new_ids)
        if not self.carry:  # every prompt computed from its start
            self.cache, self.mask = None, None
            fed = [list(ids or []) for ids in self.ids]
        width = max(map(len, fed))
        chunk = torch.full((rows, width), decoding.pad, dtype=torch.long, device=device)
        chunk_mask = torch.zeros((rows, width), dtype=torch.long, device=device)
        for r, new in enumerate(fed):
            if new:
                chunk[r, width - len(new) :] = torch.tensor(new, device=device)
                chunk_mask[r, width - len(new) :] = 1
        mask = chunk_mask if self.mask is None else torch.cat([self.mask, chunk_mask], dim=1)
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
        prompt_length = mask.shape[1]
        with self.loaded.lock, torch.no_grad():
            self._decode(chunk, mask, positions[:, -width:], decoding, on_answer, indexes, fed)
        # keep the prompts' keys and values only
        cut_cache(self.cache, prompt_length)
        self.mask = self.mask[:, :prompt_length]

    def _decode(self, chunk, mask, positions, decoding, on_answer, indexes, fed) -> None:
        import torch

        device = self.loaded.device
        model = self.loaded.model
        rows = chunk.shape[0]
        try:
            output = model(
                input_ids=chunk,
                attention_mask=mask,
                position_ids=positions,
                past_key_values=self.cache,
                use_cache=True,
                logits_to_keep=1,
            )
            self.cache = output.past_key_values
            self.prefill_tokens += sum(map(len, fed))
            live = [
                decoding._row(indexes[r], self.ids[r] or [], int(positions[r, -1]) + 1)
                for r in range(rows)
            ]
            row_of = {indexes[r]: r for r in range(rows)}
            live = decoding._advance(live, output.logits[:, -1], on_answer)
            while live:
                # finished rows are fed padding (masked) so that the batch stays whole
                feed = torch.full((rows, 1), decoding.pad, dtype=torch.long, device=device)
                column = torch.zeros((rows, 1), dtype=torch.long, device=device)
                step_positions = torch.zeros((rows, 1), dtype=torch.long, device=device)
                for row in live:
                    r = row_of[row.index]
                    feed[r, 0], column[r, 0], step_positions[r, 0] = row.new[-1], 1, row.position
                    row.position += 1
                mask = torch.cat([mask, column], dim=1)
                output = model(
                    input_ids=feed,
                    attention_mask=mask,
                    position_ids=step_positions,
                    past_key_values=self.cache,
                    use_cache=True,
                )
                ongoing = [row_of[row.index] for row in live]
                live = decoding._advance(live, output.logits[ongoing, -1], on_answer)
            self.mask = mask
        except BaseException:
            self.broken = True  # its cache may hold part of a step: not to be used again
            raise
