"""A system's generation configuration, typed and checked (the paper's options,
Appendix A.2: decoding, chat template, QA markers, repetition penalty, 512 new
tokens, RoPE linear scaling to the target context)."""

from __future__ import annotations

import math
import types
import typing
from dataclasses import asdict, dataclass

from generation.backends.capabilities import CAPABILITIES
from generation.prompts import TEMPLATES

CHAT_TEMPLATES = ("tokenizer", *TEMPLATES)
MAX_SEED = 2**31 - 1  # what the database stores


class GenerationConfigError(ValueError):
    pass


def _type_ok(value, expected) -> bool:
    if typing.get_origin(expected) in (typing.Union, types.UnionType):
        return any(_type_ok(value, option) for option in typing.get_args(expected))
    if expected is type(None):
        return value is None
    if typing.get_origin(expected) is tuple:  # tuple[int, ...]
        (item, *_) = typing.get_args(expected)
        return isinstance(value, (list, tuple)) and all(_type_ok(v, item) for v in value)
    if expected is bool:
        return isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if expected is float:
        return (
            isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        )
    return isinstance(value, typing.get_origin(expected) or expected)


def check_types(cls, data, error: type[Exception]) -> None:
    """A configuration is a JSON object whose settings have their field's type
    (an int for a float is fine, a boolean for a number is not)."""
    if not isinstance(data, dict):
        raise error(f"A configuration is a JSON object, not {type(data).__name__}.")
    unknown = sorted(str(key) for key in set(data) - set(cls.__dataclass_fields__))
    if unknown:
        return  # the caller names them
    hints = typing.get_type_hints(cls)
    wrong = [
        f"{name} is {type_words(hints[name])}, not {json_type(value)}"
        for name, value in data.items()
        if not _type_ok(value, hints[name])
    ]
    if wrong:
        raise error(f"Wrong type: {'; '.join(wrong)}.")


def type_words(expected) -> str:
    if typing.get_origin(expected) in (typing.Union, types.UnionType):
        return " or ".join(type_words(option) for option in typing.get_args(expected))
    if typing.get_origin(expected) is tuple:
        return "a list of whole numbers"
    words = {
        type(None): "null",
        str: "a string",
        int: "a whole number",
        float: "a number",
        bool: "true or false",
        dict: "an object",
    }
    return words.get(expected, str(expected))


def json_type(value) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", str: "a string", list: "a list", dict: "an object"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__
    )


@dataclass(frozen=True)
class GenerationConfig:
    backend: str = "hf"  # "hf": a local model on a gpu worker; "openai": any compatible server
    # hf
    model_path: str = ""
    dtype: str = "auto"
    attn_implementation: str = "sdpa"
    chat_template: str = "tokenizer"
    context_length: int | None = None  # None: the model's own
    rope_scaling: bool = False  # factor ceil(context_length / original), as in the paper
    rope_type: str = "linear"  # or "dynamic" (NTK), "yarn"
    prefix_cache: bool = True
    # openai
    base_url: str = ""
    model: str = ""
    server: str = "openai"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 300.0
    max_concurrency: int = 8  # requests at once (single-turn: questions; multi-turn: meetings)
    # both
    qa_markers: bool = False
    temperature: float = 0.0  # 0: greedy; the paper's nucleus: 0.6 with top_p 0.9
    top_p: float | None = None
    top_k: int | None = None
    repetition_penalty: float | None = None
    max_new_tokens: int = 512
    language: str = "en"
    length_instruction: bool = False  # L-Eval: "Answer in about N words."

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
        if self.language not in ("en", "cs"):
            raise GenerationConfigError("language: 'en' or 'cs'.")
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
            return
        if not self.base_url or not self.model:
            raise GenerationConfigError("An OpenAI-compatible system needs base_url and model.")
        if self.server not in CAPABILITIES:
            raise GenerationConfigError(f"server: one of {', '.join(CAPABILITIES)}.")
        for name in ("top_p", "top_k", "repetition_penalty"):
            if getattr(self, name) is not None and not CAPABILITIES[self.server][name]:
                raise GenerationConfigError(
                    f"A {self.server} server does not accept {name}; remove it or use a server "
                    "that does."
                )

    def api_params(self, seed: int | None) -> dict:
        params: dict = {"temperature": self.temperature, "max_tokens": self.max_new_tokens}
        if self.top_p is not None:
            params["top_p"] = self.top_p
        if seed is not None and CAPABILITIES[self.server]["seed"]:
            params["seed"] = seed
        extra = {
            k: getattr(self, k)
            for k in ("top_k", "repetition_penalty")
            if getattr(self, k) is not None
        }
        if extra:
            params["extra_body"] = extra
        return params
