"""RULER's variable tracking (`scripts/data/synthetic/variable_tracking.py`)
with the noise haystack: the same random draws in the same order as the
authors' script (Python's `random` and NumPy's legacy generator, both seeded
with the seed), so the same seed and tokenizer make the same records. As the
script does, a first call makes a one-shot example at 500 tokens, shown
(with fresh names and value) before every prompt."""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from typing import Any

import numpy as np

from corpus.ruler.constants import TEMPLATES, manifest_record

NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
TASK = TEMPLATES["variable_tracking"]


class VariableTracking:
    def __init__(
        self,
        count_tokens: Callable[[str], int],
        template: str,
        *,
        seed: int,
        tokens_to_generate: int,
        type_haystack: str,
        num_chains: int,
        num_hops: int,
    ) -> None:
        if type_haystack != "noise":
            raise ValueError(
                f"RULER's {type_haystack!r} haystack needs the authors' download; made here: noise."
            )
        self.count_tokens = count_tokens
        self.template = template
        self.random = random.Random(seed)
        self.numpy = np.random.RandomState(seed)  # the script's np.random.seed
        self.tokens_to_generate = tokens_to_generate
        self.num_chains, self.num_hops = num_chains, num_hops

    def _chains(self, is_icl: bool) -> tuple[list[list[str]], list[list[str]]]:
        """generate_chains."""
        k = 5 if not is_icl else 3
        num_hops = self.num_hops if not is_icl else min(10, self.num_hops)
        upper = string.ascii_uppercase
        total = (num_hops + 1) * self.num_chains
        names = ["".join(self.random.choices(upper, k=k)).upper() for _ in range(total)]
        while len(set(names)) < self.num_chains * (num_hops + 1):
            names.append("".join(self.random.choices(upper, k=k)).upper())
        names_out, chains = [], []
        for i in range(0, len(names), num_hops + 1):
            these = names[i : i + num_hops + 1]
            names_out.append(these)
            if is_icl:
                chain = [f"VAR {these[0]} = 12345"]
            else:
                chain = [f"VAR {these[0]} = {str(self.numpy.randint(10000, 99999))}"]
            for j in range(num_hops):
                chain.append(f"VAR {these[j + 1]} = VAR {these[j]} ")
            chains.append(chain)
        return names_out, chains

    def input_output(self, num_noises: int, is_icl: bool) -> tuple[str, list[str]]:
        """generate_input_output, noise haystack."""
        names, chains = self._chains(is_icl)
        value = chains[0][0].split("=")[-1].strip()
        sentences = [NOISE] * num_noises
        for chain in chains:
            positions = list(sorted(self.random.sample(range(len(sentences)), len(chain))))
            for insert_pi, j in zip(positions, range(len(chain)), strict=True):
                sentences.insert(insert_pi + j, chain[j])
        context = "\n".join(sentences).replace(". \n", ".\n")
        template = self.template
        if is_icl and template != TASK["template"] + TASK["answer_prefix"]:
            template = TASK["template"] + TASK["answer_prefix"]  # the model template removed
        text = template.format(context=context, query=value, num_v=self.num_hops + 1)
        return text, names[0]

    def _randomize_icl(self, example: str) -> str:
        """randomize_icl: the example's names and value drawn again."""
        for item in example.strip().split()[-self.num_hops - 1 :]:
            fresh = "".join(self.random.choices(string.ascii_uppercase, k=len(item))).upper()
            example = example.replace(item, fresh)
        return example.replace("12345", str(self.numpy.randint(10000, 99999)))

    def _fitting(
        self, max_seq_length: int, is_icl: bool, incremental: int, extra_tokens: int
    ) -> int:
        """The binary search for the largest number of noise sentences."""
        sample, _ = self.input_output(incremental, is_icl)
        per_noise = self.count_tokens(sample) / incremental
        lower, upper = incremental, max(int((max_seq_length / per_noise) * 3), incremental * 2)
        optimal = None
        while lower <= upper:
            mid = (lower + upper) // 2
            text, _ = self.input_output(mid, is_icl)
            if self.count_tokens(text) + extra_tokens <= max_seq_length:
                optimal, lower = mid, mid + 1
            else:
                upper = mid - 1
        return optimal if optimal is not None else incremental

    def samples(self, num_samples: int, max_seq_length: int) -> list[dict[str, Any]]:
        """main(): the one-shot example (sys_vartrack_w_noise_random at 500
        tokens, no answer tokens), then the records."""
        # the example: incremental 5, is_icl, no tokens to generate
        used = self._fitting(500, True, 5, 0)
        while True:
            example_input, example_answer = self.input_output(used, True)
            if self.count_tokens(example_input) <= 500:
                break
            used = self._step_down(used, 5, 500)
        example = example_input + " " + " ".join(example_answer) + "\n"
        example_tokens = self.count_tokens(example)

        incremental = 5 if max_seq_length < 4096 else 10
        extra = example_tokens + self.tokens_to_generate
        num_noises = self._fitting(max_seq_length, False, incremental, extra)
        records = []
        for index in range(num_samples):
            used = num_noises
            while True:
                input_text, answer = self.input_output(used, False)
                cutoff = input_text.index(TASK["template"][:20])
                input_text = (
                    input_text[:cutoff] + self._randomize_icl(example) + "\n" + input_text[cutoff:]
                )
                length = self.count_tokens(input_text) + self.tokens_to_generate
                if length <= max_seq_length:
                    break
                used = self._step_down(used, incremental, max_seq_length)
            records.append(
                manifest_record(index, input_text, answer, length, TASK["answer_prefix"])
            )
        return records

    def _step_down(self, used: int, incremental: int, max_seq_length: int) -> int:
        if used <= incremental:  # where the script would try again for ever
            raise ValueError(
                f"RULER's {max_seq_length} tokens hold no variable-tracking prompt and its "
                f"{self.tokens_to_generate} answer tokens: choose a longer length."
            )
        return used - incremental
