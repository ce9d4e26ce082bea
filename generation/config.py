"""A system's generation configuration, typed and checked (the paper's options,
Appendix A.2: decoding, chat template, QA markers, repetition penalty, 512 new
tokens, RoPE linear scaling to the target context)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from core.errors import ErrorCode
from corpus.choices import Language, either
from generation.prompts import TEMPLATES
from generation.prompts_leval import FAMILIES as LEVAL_FAMILIES
from llm.config import ModelConfig, ModelConfigError, check_types

CHAT_TEMPLATES = ("tokenizer", *TEMPLATES)


class GenerationConfigError(ModelConfigError):
    code = ErrorCode.SYSTEM_CONFIG_INVALID


@dataclass(frozen=True)
class GenerationConfig(ModelConfig):
    """A system's settings. The endpoint, sampling, limits and prices are
    `llm.config.ModelConfig`'s; `backend` says whether `server` is used."""

    backend: str = "hf"  # "hf": a local model on a gpu worker; "openai": any compatible server
    # hf
    chat_template: str = "tokenizer"
    context_length: int | None = None  # None: the model's own
    rope_scaling: bool = False  # factor ceil(context_length / original), as in the paper
    rope_type: str = "linear"  # or "dynamic" (NTK), "yarn"
    prefix_cache: bool = True
    # prompts decoded together at most: a meeting's questions (single-turn) or
    # meetings (multi-turn); fewer when the free memory says so
    max_batch_size: int = 16
    # openai
    timeout_s: float = 300.0
    # how the server's model counts tokens, to truncate a benchmark's input to
    # context_length as its authors did ("tiktoken:cl100k_base"; ZeroSCROLLS)
    tokenizer: str = ""
    # the L-Eval model family the system belongs to (turbo16k, claude, llama2-chat,
    # chatglm2, xgen, longchat, vicuna, mpt): how L-Eval's scripts prompt it, and
    # the wording of the length instruction on any benchmark; "" : L-Eval's GPT
    # wording for a server, Concord's "Answer in about N words." for a local model
    prompt_family: str = ""
    max_concurrency: int = 8  # requests at once (single-turn: questions; multi-turn: meetings)
    # both
    qa_markers: bool = False
    temperature: float = 0.0  # 0: greedy; the paper's nucleus: 0.6 with top_p 0.9
    max_new_tokens: int = 512
    language: str = Language.ENGLISH
    length_instruction: bool = False  # L-Eval: "Answer in about N words."

    @property
    def is_local(self) -> bool:
        return self.backend == "hf"

    @classmethod
    def from_dict(cls, data: dict) -> GenerationConfig:
        check_types(cls, data, GenerationConfigError)
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            raise GenerationConfigError(f"Unknown generation setting(s): {', '.join(unknown)}.")
        config = cls(**data)
        config.check()
        return config

    def as_dict(self) -> dict:
        return asdict(self)

    def check(self) -> None:
        if self.backend not in ("hf", "openai"):
            raise GenerationConfigError("backend: 'hf' or 'openai'.")
        if self.language not in Language.values:
            raise GenerationConfigError(f"language: {either(Language)}.")
        if self.prompt_family and self.prompt_family not in LEVAL_FAMILIES:
            raise GenerationConfigError(
                f"prompt_family {self.prompt_family!r}: one of {', '.join(LEVAL_FAMILIES)}."
            )
        if self.max_new_tokens < 1:
            raise GenerationConfigError("max_new_tokens must be positive.")
        if self.backend == "hf":
            if not self.model_path:
                raise GenerationConfigError("A local (hf) system needs model_path.")
            if self.chat_template not in CHAT_TEMPLATES:
                raise GenerationConfigError(f"chat_template: one of {', '.join(CHAT_TEMPLATES)}.")
            if self.rope_scaling and not self.context_length:
                raise GenerationConfigError("RoPE scaling needs context_length.")
            if self.rope_type not in ("linear", "dynamic", "yarn"):
                raise GenerationConfigError("rope_type: 'linear', 'dynamic' or 'yarn'.")
            if self.max_batch_size < 1:
                raise GenerationConfigError("max_batch_size must be at least 1 (1: one at a time).")
            return
        if self.tokenizer and not self.tokenizer.startswith(("tiktoken:", "hf:")):
            raise GenerationConfigError(
                'tokenizer: "tiktoken:<encoding>" (e.g. "tiktoken:cl100k_base") or '
                '"hf:<folder>" (the model\'s own tokenizer, saved locally), for an API model.'
            )
        if self.tokenizer and self.tokenizer.startswith("hf:"):
            if not Path(self.tokenizer.removeprefix("hf:")).is_dir():
                raise GenerationConfigError(
                    f"tokenizer {self.tokenizer!r}: no such folder (a tokenizer saved with "
                    "save_pretrained; it is never downloaded)."
                )
        elif self.tokenizer:
            import tiktoken

            known = [n for n in tiktoken.list_encoding_names() if not n.endswith("_offline")]
            if self.tokenizer.removeprefix("tiktoken:") not in known:
                raise GenerationConfigError(
                    f"tokenizer {self.tokenizer!r}: tiktoken has no such encoding; one of "
                    f"{', '.join('tiktoken:' + n for n in known)}."
                )
        if not self.base_url or not self.model:
            raise GenerationConfigError("An OpenAI-compatible system needs base_url and model.")
        if self.server == "hf":
            raise GenerationConfigError('A local model is backend "hf", not server "hf".')
        self.check_endpoint(GenerationConfigError)
