"""What a researcher asks RULER to make (the command `make_ruler`, the
console's form, the worker that makes it): checked once, here, so that each
way in refuses the same things with the same words."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from corpus.ruler.constants import NUM_SAMPLES, RANDOM_SEED, TASKS

MOST_SAMPLES = 10_000
MOST_TOKENS = 1_048_576  # RULER's longest published setting is 128K; 1M leaves room
DEFAULT_LENGTHS = (4096, 8192, 16384)
DEFAULT_TOKENIZER = "tiktoken:cl100k_base"


class BadOrder(ValueError):
    """The order cannot be made; the message says why."""


@dataclass(frozen=True)
class RulerOrder:
    tasks: tuple[str, ...]
    lengths: tuple[int, ...]
    samples: int = NUM_SAMPLES
    seed: int = RANDOM_SEED
    tokenizer: str = DEFAULT_TOKENIZER

    def as_options(self) -> dict[str, Any]:
        return {**asdict(self), "tasks": list(self.tasks), "lengths": list(self.lengths)}

    def describe(self) -> str:
        return (
            f"{len(self.tasks)} tasks x {len(self.lengths)} lengths, {self.samples} samples "
            f"each, seed {self.seed}, {self.tokenizer}"
        )


def lengths_from(text: str) -> tuple[int, ...]:
    """`4096,8192` as lengths in tokens."""
    try:
        numbers = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise BadOrder(f"lengths {text!r}: whole numbers with commas, e.g. 4096,8192.") from None
    if not numbers or any(n <= 0 for n in numbers):
        raise BadOrder(f"lengths {text!r}: positive whole numbers, e.g. 4096,8192.")
    return numbers


def ruler_order(
    tasks: list[str] | tuple[str, ...],
    lengths: list[int] | tuple[int, ...],
    samples: int = NUM_SAMPLES,
    seed: int = RANDOM_SEED,
    tokenizer: str = DEFAULT_TOKENIZER,
) -> RulerOrder:
    """The order, checked (BadOrder says what is wrong)."""
    tasks = [t.strip() for t in tasks if t.strip()]
    unknown = [t for t in tasks if t not in TASKS]
    if unknown or not tasks:
        raise BadOrder(
            f"tasks {','.join(tasks) or '(none)'}: made here are {', '.join(TASKS)} (the others "
            "need the authors' downloads; import the files their scripts make)."
        )
    if not lengths or any(not 0 < n <= MOST_TOKENS for n in lengths):
        raise BadOrder(f"lengths: from 1 to {MOST_TOKENS:,} tokens each.")
    if not 0 < samples <= MOST_SAMPLES:
        raise BadOrder(f"samples: from 1 to {MOST_SAMPLES:,}.")
    if not tokenizer.startswith(("tiktoken:", "hf:")):
        raise BadOrder(f"tokenizer {tokenizer!r}: 'tiktoken:<encoding>' or 'hf:<a local folder>'.")
    return RulerOrder(
        tuple(dict.fromkeys(tasks)), tuple(dict.fromkeys(lengths)), samples, seed, tokenizer
    )
