"""A local HF transformers causal LM behind a chat interface.

Models are loaded once per worker process and kept (a `-Q gpu -c 1` worker
serves a whole run with one load). `HFChatClient` answers
`client.chat.completions.create(model=..., messages=..., **params)` with an
object shaped like the OpenAI client's answer, so that LLM judges (and the
call ledger) work the same with a local model.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from llm.text import storable

DTYPES = ("auto", "float32", "bfloat16", "float16")
ATTENTION = ("sdpa", "eager", "flash_attention_2")


@dataclass(frozen=True)
class HFModelSpec:
    path: str
    dtype: str = "auto"
    device: str = "auto"
    attn_implementation: str = "sdpa"
    rope_factor: float | None = None  # RoPE scaling, as the paper extends Vicuna to 32K
    rope_type: str = "linear"

    def check(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype {self.dtype!r}: one of {', '.join(DTYPES)}.")
        if self.attn_implementation not in ATTENTION:
            raise ValueError(f"attn_implementation: one of {', '.join(ATTENTION)}.")


def generation_options(
    tokenizer,
    max_tokens: int,
    temperature: float = 0.0,
    top_p: float | None = None,
    top_k: int | None = None,
    repetition_penalty: float | None = None,
) -> dict:
    """generate()'s arguments: greedy when temperature is 0, else sampling."""
    options: dict = {
        "max_new_tokens": max_tokens,
        "do_sample": temperature > 0,
        "pad_token_id": tokenizer.pad_token_id
        if tokenizer.pad_token_id is not None
        else tokenizer.eos_token_id,
    }
    if temperature > 0:
        options["temperature"] = temperature
        if top_p is not None:
            options["top_p"] = top_p
        if top_k is not None:
            options["top_k"] = top_k
    if repetition_penalty is not None:
        options["repetition_penalty"] = repetition_penalty
    return options


class LoadedModel:
    def __init__(self, spec: HFModelSpec) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        spec.check()
        device = spec.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = {
            "auto": "auto",
            "float32": torch.float32,
            "bfloat16": torch.bfloat16,
            "float16": torch.float16,
        }[spec.dtype]
        self.tokenizer = AutoTokenizer.from_pretrained(spec.path)
        extra = {}
        if spec.rope_factor:
            from transformers import AutoConfig

            config = AutoConfig.from_pretrained(spec.path)
            if hasattr(config, "rope_parameters"):  # transformers >= 5
                config.rope_parameters = {
                    **(config.rope_parameters or {}),
                    "rope_type": spec.rope_type,
                    "factor": spec.rope_factor,
                }
                if spec.rope_type == "yarn":  # YaRN needs the original window
                    config.rope_parameters["original_max_position_embeddings"] = (
                        config.max_position_embeddings
                    )
            else:
                config.rope_scaling = {"type": spec.rope_type, "factor": spec.rope_factor}
            extra["config"] = config
        self.model = AutoModelForCausalLM.from_pretrained(
            spec.path, dtype=dtype, attn_implementation=spec.attn_implementation, **extra
        ).to(device)
        self.context_length = int(
            getattr(self.model.config, "max_position_embeddings", 0) * (spec.rope_factor or 1)
        )
        self.model.eval()
        self.device = device
        self.lock = threading.Lock()  # one generation at a time on one model

    def prompt_ids(self, messages: list[dict]):
        if self.tokenizer.chat_template:
            encoded = self.tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
            )
            return encoded["input_ids"]
        text = "\n\n".join(m["content"] for m in messages)
        return self.tokenizer(text, return_tensors="pt")["input_ids"]

    def generate(
        self,
        messages: list[dict],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        top_p: float | None = None,
        top_k: int | None = None,
        repetition_penalty: float | None = None,
        seed: int | None = None,
    ) -> tuple[str, str, int, int]:
        """(text, finish_reason, prompt tokens, completion tokens)."""
        import torch

        input_ids = self.prompt_ids(messages).to(self.device)
        options = generation_options(
            self.tokenizer, max_tokens, temperature, top_p, top_k, repetition_penalty
        )
        with self.lock, torch.no_grad():
            if seed is not None:
                torch.manual_seed(seed)
            output = self.model.generate(
                input_ids, attention_mask=torch.ones_like(input_ids), **options
            )
        new_tokens = output[0, input_ids.shape[1] :]
        eos = self.tokenizer.eos_token_id
        stopped = eos is not None and len(new_tokens) and int(new_tokens[-1]) == eos
        finish = "stop" if stopped or len(new_tokens) < max_tokens else "length"
        text = storable(self.tokenizer.decode(new_tokens, skip_special_tokens=True))
        return text, finish, int(input_ids.shape[1]), int(len(new_tokens))


@dataclass
class PrefixRun:
    """What a shared-prefix generation did: the new tokens per suffix and the
    number of prompt tokens the model actually computed (its prefill)."""

    outputs: list[list[int]]
    finish_reasons: list[str]
    prefill_tokens: int


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
    eos = loaded.tokenizer.eos_token_id
    finish = "stop" if (new and new[-1] == eos) or len(new) < max_tokens else "length"
    return new, finish


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
) -> PrefixRun:
    """Answer several prompts that share `prefix_ids` (the transcript part of
    single-turn prompts). With `use_cache` the prefix is computed once and each
    prompt continues a copy of its KV cache (the copy keeps the original
    intact); without, every prompt is encoded in full, as the paper's scripts
    do. Greedy outputs are identical either way."""
    import copy

    import torch

    device = loaded.device
    prefix = torch.tensor([prefix_ids], device=device)
    outputs, finishes, prefill = [], [], 0
    with loaded.lock:
        cache = None
        if use_cache:
            with torch.no_grad():
                cache = loaded.model(prefix, use_cache=True).past_key_values
            prefill += len(prefix_ids)
        for suffix in suffixes:
            full = torch.tensor([prefix_ids + suffix], device=device)
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
    return PrefixRun(outputs, finishes, prefill)


_LOADED: dict[HFModelSpec, LoadedModel] = {}
_LOADING = threading.Lock()


def load_model(spec: HFModelSpec) -> LoadedModel:
    """The model for `spec`, loaded on first use in this process and kept."""
    with _LOADING:
        if spec not in _LOADED:
            _LOADED[spec] = LoadedModel(spec)
        return _LOADED[spec]


def loaded_specs() -> list[HFModelSpec]:
    return list(_LOADED)


class _Completions:
    def __init__(self, spec: HFModelSpec) -> None:
        self.spec = spec

    def create(
        self,
        *,
        model: str,
        messages: list[dict],
        max_tokens: int = 512,
        temperature: float = 0.0,
        top_p: float | None = None,
        seed: int | None = None,
        extra_body: dict | None = None,
        **unsupported,
    ) -> SimpleNamespace:
        if unsupported:
            raise TypeError(f"Not supported by the local backend: {', '.join(unsupported)}.")
        extra = extra_body or {}
        text, finish, prompt, completion = load_model(self.spec).generate(
            messages,
            max_tokens=max_tokens,
            temperature=temperature,
            top_p=top_p,
            top_k=extra.get("top_k"),
            repetition_penalty=extra.get("repetition_penalty"),
            seed=seed,
        )
        return SimpleNamespace(
            choices=[SimpleNamespace(message=SimpleNamespace(content=text), finish_reason=finish)],
            usage=SimpleNamespace(prompt_tokens=prompt, completion_tokens=completion),
            system_fingerprint=f"hf:{self.spec.path}",
        )


class HFChatClient:
    """The slice of openai.OpenAI that judges use, answered by a local model."""

    def __init__(self, spec: HFModelSpec) -> None:
        self.chat = SimpleNamespace(completions=_Completions(spec))


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
        eos = self.loaded.tokenizer.eos_token_id
        finish = "stop" if (new and new[-1] == eos) or len(new) < max_tokens else "length"
        return new, finish
