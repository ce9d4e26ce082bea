"""RULER's frequent-words extraction (`scripts/data/synthetic/
freq_words_extraction.py`): coded words drawn with Zipf frequencies, the three
most frequent after the dots to be named. The same random draws in the same
order as the authors' script, so the same seed and tokenizer make the same
records."""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.special import zeta

from corpus.ruler.constants import TEMPLATES, manifest_record

TASK = TEMPLATES["freq_words_extraction"]


class FreqWords:
    def __init__(
        self,
        count_tokens: Callable[[str], int],
        template: str,
        *,
        seed: int,
        tokens_to_generate: int,
        alpha: float = 2.0,
        coded_wordlen: int = 6,
        vocab_size: int = -1,
    ) -> None:
        self.count_tokens = count_tokens
        self.template = template
        self.seed = seed
        self.random = random.Random(seed)
        self.tokens_to_generate = tokens_to_generate
        self.alpha, self.coded_wordlen, self.vocab_size = alpha, coded_wordlen, vocab_size

    def input_output(
        self, max_len: int, num_words: int, vocab_size: int, incremental: int
    ) -> tuple[str, list[str], int]:
        """generate_input_output."""
        letters, length = string.ascii_lowercase, self.coded_wordlen
        vocab = ["".join(self.random.choices(letters, k=length)) for _ in range(vocab_size)]
        while len(set(vocab)) < vocab_size:
            vocab.append("".join(self.random.choices(letters, k=length)))
        vocab = sorted(set(vocab))
        random.Random(self.seed).shuffle(vocab)
        vocab[0] = "..."  # the top-ranked word is noise

        def text_of(words: int) -> tuple[str, list[str]]:
            k = np.arange(1, len(vocab) + 1)
            counts = words * (k**-self.alpha) / zeta(self.alpha)
            sampled = [x for w, n in zip(vocab, counts.astype(int), strict=True) for x in [w] * n]
            random.Random(self.seed).shuffle(sampled)
            return self.template.format(context=" ".join(sampled), query=""), vocab[1:4]

        if num_words > 0:
            text, answer = text_of(num_words)
            while self.count_tokens(text) > max_len:
                num_words -= incremental
                text, answer = text_of(num_words)
        else:
            num_words = max_len // self.coded_wordlen
            text, answer = text_of(num_words)
            while self.count_tokens(text) < max_len:
                num_words += incremental
                text, answer = text_of(num_words)
            num_words -= incremental
        text, answer = text_of(num_words)
        return text, answer, num_words

    def samples(self, num_samples: int, max_seq_length: int) -> list[dict[str, Any]]:
        """sys_kwext."""
        max_len = max_seq_length - self.tokens_to_generate
        vocab_size = max_len // 50 if self.vocab_size == -1 else self.vocab_size
        if vocab_size < 4:
            raise ValueError(
                f"RULER's frequent words need at least {4 * 50 + self.tokens_to_generate} tokens "
                f"(a vocabulary of four); {max_seq_length} is too short."
            )
        _, _, words = self.input_output(max_len, -1, vocab_size, max_len // 32)
        records = []
        for index in range(num_samples):
            text, answer, _ = self.input_output(max_len, words, vocab_size, max_len // 32)
            length = self.count_tokens(text) + self.tokens_to_generate
            records.append(manifest_record(index, text, answer, length, TASK["answer_prefix"]))
        return records
