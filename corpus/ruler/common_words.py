"""RULER's common-words extraction (`scripts/data/synthetic/
common_words_extraction.py`): a numbered list of words in which ten appear
far more often than the rest, the ten to be named. The same random draws in
the same order as the authors' script (its global `random`, seeded, and a
fresh `Random(seed)` for each shuffle), the same binary search for the list's
size, so the same seed and tokenizer make the same records.

The words are wonderwords' nouns, adjectives and verbs (8,169 of them, the
version the authors' image installs, pinned in pyproject.toml). Past that
many the script draws from its `json/english_words.json`, a file its
repository keeps in Git LFS and Concord does not ship: a length that needs it
(about 110,000 tokens and more with cl100k_base) is refused with the reason.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from corpus.ruler.constants import TEMPLATES, manifest_record

TASK = TEMPLATES["common_words_extraction"]


@lru_cache(maxsize=1)
def _sorted_words() -> tuple[str, ...]:
    import wonderwords.random_word as random_word

    nouns = random_word._get_words_from_text_file("nounlist.txt")
    adjs = random_word._get_words_from_text_file("adjectivelist.txt")
    verbs = random_word._get_words_from_text_file("verblist.txt")
    return tuple(sorted(set(nouns + adjs + verbs)))


class CommonWords:
    def __init__(
        self,
        count_tokens: Callable[[str], int],
        template: str,
        *,
        seed: int,
        tokens_to_generate: int,
        freq_cw: int = 30,
        freq_ucw: int = 3,
        num_cw: int = 10,
        num_fewshot: int = 1,
    ) -> None:
        self.count_tokens = count_tokens
        self.template = template
        self.seed = seed
        self.random = random.Random(seed)  # the script's `random.seed(args.random_seed)`
        self.tokens_to_generate = tokens_to_generate
        self.freq_cw, self.freq_ucw, self.num_cw = freq_cw, freq_ucw, num_cw
        self.num_fewshot = num_fewshot
        words = list(_sorted_words())
        random.Random(seed).shuffle(words)
        self.words = words

    def example(
        self, num_words: int, common_repeats: int, uncommon_repeats: int, common_nums: int
    ) -> tuple[str, list[str]]:
        """get_example."""
        if num_words > len(self.words):
            raise ValueError(
                f"RULER's common words need {num_words:,} different words at this length; "
                f"wonderwords has {len(self.words):,} and the rest are in RULER's "
                "english_words.json (Git LFS), which is not shipped: choose a shorter length."
            )
        full = self.random.sample(self.words, num_words)
        common, uncommon = full[:common_nums], full[common_nums:]
        word_list = common * int(common_repeats) + uncommon * int(uncommon_repeats)
        random.Random(self.seed).shuffle(word_list)
        return " ".join(f"{i + 1}. {word}" for i, word in enumerate(word_list)), common

    def input_output(self, num_words: int, max_seq_length: int) -> tuple[str, list[str]]:
        """generate_input_output."""
        shots = []
        if max_seq_length < 4096:
            for _ in range(self.num_fewshot):
                shots.append(self.example(20, 3, 1, self.num_cw))
            context, answer = self.example(num_words, 6, 1, self.num_cw)
        else:
            for _ in range(self.num_fewshot):
                shots.append(self.example(40, 10, 3, self.num_cw))
            context, answer = self.example(num_words, self.freq_cw, self.freq_ucw, self.num_cw)
        written = [
            self.template.format(num_cw=self.num_cw, context=text, query="")
            + " "
            + " ".join(f"{i + 1}. {word}" for i, word in enumerate(words))
            for text, words in shots
        ]
        text = self.template.format(num_cw=self.num_cw, context=context, query="")
        return "\n".join(written) + "\n" + text, answer

    def samples(self, num_samples: int, max_seq_length: int) -> list[dict[str, Any]]:
        """sys_word_pair_random (model_template_token 0: the base template)."""
        incremental = 10
        sample_text, _ = self.input_output(4096, max_seq_length)
        tokens_per_word = self.count_tokens(sample_text) / 4096
        lower, upper = incremental, max(int(max_seq_length // tokens_per_word) * 2, incremental * 2)
        best = None
        while lower <= upper:
            mid = (lower + upper) // 2
            text, _ = self.input_output(mid, max_seq_length)
            if self.count_tokens(text) + self.tokens_to_generate <= max_seq_length:
                best, lower = mid, mid + 1
            else:
                upper = mid - 1
        num_words = best if best is not None else incremental
        records = []
        for index in range(num_samples):
            used = num_words
            while True:
                text, answer = self.input_output(used, max_seq_length)
                length = self.count_tokens(text) + self.tokens_to_generate
                if length <= max_seq_length:
                    break
                if used <= incremental:  # the script would try this size for ever
                    raise ValueError(
                        f"RULER's common words cannot fit {max_seq_length} tokens: the example "
                        "and the shortest list are longer."
                    )
                used -= incremental
            records.append(manifest_record(index, text, answer, length, TASK["answer_prefix"]))
        return records
