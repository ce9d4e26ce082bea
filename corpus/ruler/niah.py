"""RULER's needle-in-a-haystack task (`scripts/data/synthetic/niah.py`), with
the noise and needle haystacks: the same random draws in the same order as
the authors' script, so the same seed and tokenizer make the same records."""

from __future__ import annotations

import functools
import random
import uuid
from collections.abc import Callable
from typing import Any

from corpus.ruler.constants import TEMPLATES

NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
HAYSTACKS = ("noise", "needle")


@functools.lru_cache(maxsize=1)
def key_words() -> list[str]:
    """niah.py's key words: every adjective-noun pair of wonderwords' lists
    (the version the authors' image installs, pinned in pyproject.toml),
    sorted. 6.2 million strings, some 20 s and 0.5 GB to make: kept for the
    next task until `key_words.cache_clear()` (prepare.write_data clears it)."""
    import wonderwords.random_word as random_word

    nouns = random_word._get_words_from_text_file("nounlist.txt")
    adjs = random_word._get_words_from_text_file("adjectivelist.txt")
    return sorted({f"{adj}-{noun}" for adj in adjs for noun in nouns})


class Niah:
    """One task's generator: `samples(n, max_seq_length)` is niah.py's
    generate_samples."""

    def __init__(
        self,
        count_tokens: Callable[[str], int],
        template: str,
        *,
        seed: int,
        tokens_to_generate: int,
        type_haystack: str,
        type_needle_k: str,
        type_needle_v: str,
        num_needle_k: int,
        num_needle_v: int,
        num_needle_q: int,
    ) -> None:
        if type_haystack not in HAYSTACKS:
            raise ValueError(
                f"RULER's {type_haystack!r} haystack needs the authors' download; made here: "
                f"{', '.join(HAYSTACKS)}."
            )
        self.count_tokens = count_tokens
        self.template = template
        self.seed = seed
        self.random = random.Random(seed)  # the script's random.seed(args.random_seed)
        self.tokens_to_generate = tokens_to_generate
        self.type_haystack = type_haystack
        self.type_needle_k, self.type_needle_v = type_needle_k, type_needle_v
        self.num_needle_k = max(num_needle_k, num_needle_q)
        self.num_needle_v, self.num_needle_q = num_needle_v, num_needle_q
        self.haystack = NOISE if type_haystack == "noise" else NEEDLE
        self.words = key_words() if "words" in (type_needle_k, type_needle_v) else []

    def _random(self, kind: str) -> str:
        if kind == "numbers":
            return str(self.random.randint(10**6, 10**7 - 1))
        if kind == "words":
            return self.random.choice(self.words)
        if kind == "uuids":
            return str(uuid.UUID(int=self.random.getrandbits(128), version=4))
        raise ValueError(f"RULER's needles are numbers, words or uuids, not {kind!r}.")

    def input_output(self, num_haystack: int) -> tuple[str, list[str]]:
        """generate_input_output: the prompt with its needles, and the answers."""
        keys, values, needles = [], [], []
        for _ in range(self.num_needle_k):
            keys.append(self._random(self.type_needle_k))
            value = []
            for _ in range(self.num_needle_v):
                value.append(self._random(self.type_needle_v))
                needles.append(
                    NEEDLE.format(type_needle_v=self.type_needle_v, key=keys[-1], value=value[-1])
                )
            values.append(value)
        random.Random(self.seed).shuffle(needles)
        if self.type_haystack == "noise":
            sentences = [self.haystack] * num_haystack
        else:
            sentences = [
                self.haystack.format(
                    type_needle_v=self.type_needle_v,
                    key=self._random(self.type_needle_k),
                    value=self._random(self.type_needle_v),
                )
                for _ in range(num_haystack)
            ]
        indexes = sorted(self.random.sample(range(num_haystack), len(needles)), reverse=True)
        for index, element in zip(indexes, needles, strict=True):
            sentences.insert(index, element)
        context = "\n".join(sentences)

        indices = self.random.sample(range(self.num_needle_k), self.num_needle_q)
        queries = [keys[i] for i in indices]
        answers = [a for i in indices for a in values[i]]
        query = ", ".join(queries[:-1]) + ", and " + queries[-1] if len(queries) > 1 else queries[0]
        template, type_needle_v = self.template, self.type_needle_v
        if self.num_needle_q * self.num_needle_v == 1:
            template = template.replace("Some", "A")
            template = template.replace("are all", "is")
            template = template.replace("are", "is")
            template = template.replace("answers", "answer")
            type_needle_v = type_needle_v[:-1]  # remove "s"
        return template.format(type_needle_v=type_needle_v, context=context, query=query), answers

    def samples(self, num_samples: int, max_seq_length: int) -> list[dict[str, Any]]:
        """generate_samples: the largest haystack whose prompt and answer fit
        `max_seq_length` tokens (a binary search), then `num_samples` records."""
        incremental = 25
        if max_seq_length < 4096:
            incremental = 5
        sample_input, _ = self.input_output(incremental)
        tokens_per_haystack = self.count_tokens(sample_input) / incremental
        lower, upper = (
            incremental,
            max(int((max_seq_length / tokens_per_haystack) * 3), incremental * 2),
        )
        optimal = None
        while lower <= upper:
            mid = (lower + upper) // 2
            input_text, _ = self.input_output(mid)
            if self.count_tokens(input_text) + self.tokens_to_generate <= max_seq_length:
                optimal, lower = mid, mid + 1
            else:
                upper = mid - 1
        num_haystack = optimal if optimal is not None else incremental

        records = []
        prefix_start = TEMPLATES["niah"]["answer_prefix"][:10]
        for _ in range(num_samples):
            used = num_haystack
            while True:
                input_text, answer = self.input_output(used)
                length = self.count_tokens(input_text) + self.tokens_to_generate
                if length <= max_seq_length:
                    break
                if used <= incremental:  # where the script would try again for ever
                    raise ValueError(
                        f"RULER's {max_seq_length} tokens hold no prompt of this task and its "
                        f"{self.tokens_to_generate} answer tokens: choose a longer length."
                    )
                used -= incremental  # the script's assert, caught: a smaller haystack
            cut = input_text.rfind(prefix_start)
            answer_prefix, input_text = input_text[cut:], input_text[:cut]
            where = input_text.find(answer[0])
            records.append(
                {
                    "index": where,  # as the script writes it: the answer's offset
                    "input": input_text,
                    "outputs": answer,
                    "length": length,
                    "length_w_model_temp": length,
                    "answer_prefix": answer_prefix,
                    "token_position_answer": self.count_tokens(input_text[:where]),
                }
            )
        return records
