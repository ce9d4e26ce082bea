"""The tokenizers RULER measures its lengths with (`scripts/data/tokenizer.py`):
a Hugging Face tokenizer from a local folder (`hf:<folder>`, its `tokenize`)
or a tiktoken encoding (`tiktoken:<name>`, its `encode`). NeMo's and
Gemini's are not offered: one needs NeMo, the other a paid call per count."""

from __future__ import annotations

from collections.abc import Callable

from core.tiktoken_offline import tiktoken_encoding


class UnknownTokenizer(ValueError):
    """The tokenizer cannot be named or loaded; the message says why."""


def token_counter(spec: str) -> Callable[[str], int]:
    """How many tokens a text is, as RULER counts for `spec`."""
    kind, _, where = spec.partition(":")
    if kind == "hf" and where:
        try:
            from transformers import AutoTokenizer
        except ImportError:
            raise UnknownTokenizer(
                f"{spec}: a Hugging Face tokenizer needs transformers (make install-gpu)."
            ) from None
        try:
            tokenizer = AutoTokenizer.from_pretrained(where, local_files_only=True)
        except (OSError, ValueError) as error:
            raise UnknownTokenizer(
                f"{spec}: no tokenizer loads from {where!r} ({error})."
            ) from None
        return lambda text: len(tokenizer.tokenize(text))
    if kind == "tiktoken" and where:
        try:
            encoding = tiktoken_encoding(where)
        except (ValueError, OSError) as error:
            raise UnknownTokenizer(f"{spec}: no tiktoken encoding {where!r} ({error}).") from None
        return lambda text: len(encoding.encode(text))
    raise UnknownTokenizer(
        f"tokenizer {spec!r}: 'hf:<a local folder>' or 'tiktoken:<encoding>' "
        "(e.g. tiktoken:cl100k_base)."
    )
