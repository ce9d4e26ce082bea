"""Loading a local HF transformers causal LM, once per worker process (a
`-Q gpu -c 1` worker serves a whole run with one load), and generating with
it one prompt at a time.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llm.text import storable

if TYPE_CHECKING:  # torch is imported where a model is used, not at start-up
    import torch

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
        # one generation at a time on one model (re-entrant: a batch may run inside one)
        self.lock = threading.RLock()

    def prompt_ids(self, messages: list[dict]) -> torch.Tensor:
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


def end_ids(loaded: LoadedModel) -> set[int]:
    """The ids that end an answer: the generation config's end-of-sequence ids
    (what generate() stops on) and the tokenizer's."""
    configured = loaded.model.generation_config.eos_token_id
    ids = set(configured if isinstance(configured, list) else [configured])
    ids.add(loaded.tokenizer.eos_token_id)
    return {int(i) for i in ids if i is not None}


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
