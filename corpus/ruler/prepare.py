"""RULER's `prepare.py` and `run.sh` data step: a task at a length, and the
data folder of several (`<length>/data/<task>/validation.jsonl`, each line
written as `manifest_utils.write_manifest` writes it)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from corpus.ruler.common_words import CommonWords
from corpus.ruler.constants import TASKS, TEMPLATES, template
from corpus.ruler.freq_words import FreqWords
from corpus.ruler.niah import Niah, key_words
from corpus.ruler.variable_tracking import VariableTracking

GENERATORS = {
    "niah": Niah,
    "variable_tracking": VariableTracking,
    "common_words_extraction": CommonWords,
    "freq_words_extraction": FreqWords,
}
SUBSET = "validation"  # prepare.py's default, the one run.sh uses


def task_records(
    task: str,
    max_seq_length: int,
    num_samples: int,
    count_tokens: Callable[[str], int],
    seed: int = 42,
) -> list[dict[str, Any]]:
    """`num_samples` records of `task` at `max_seq_length` tokens (prompt and
    answer), as prepare.py makes them with the base model template."""
    if task not in TASKS:
        raise ValueError(f"RULER task {task!r}: made here are {', '.join(TASKS)}.")
    if max_seq_length <= 0 or num_samples <= 0:
        raise ValueError("RULER's length and number of samples must be positive.")
    config = TASKS[task]
    base = config["task"]
    generator = GENERATORS[base](
        count_tokens,
        template(task),
        seed=seed,
        tokens_to_generate=TEMPLATES[base]["tokens_to_generate"],
        **config["args"],
    )
    return generator.samples(num_samples, max_seq_length)


def manifest_line(record: dict[str, Any]) -> str:
    """A record as write_manifest writes it (json.dump, ASCII, a newline)."""
    return json.dumps(record, ensure_ascii=True) + "\n"


def write_data(
    root: Path,
    tasks: Iterable[str],
    lengths: Iterable[int],
    num_samples: int,
    count_tokens: Callable[[str], int],
    seed: int = 42,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[Path]:
    """run.sh's data folders under `root`: each task at each length. A file
    is written whole or not at all (a temporary name, then renamed).
    `progress(stage, done, total)` hears of each file before it is made."""
    written: list[Path] = []
    lengths, tasks = list(lengths), list(tasks)
    try:
        for length in lengths:
            for task in tasks:
                if progress is not None:
                    stage = f"making {task} at {length:,} tokens"
                    progress(stage, len(written), len(lengths) * len(tasks))
                records = task_records(task, length, num_samples, count_tokens, seed)
                path = root / str(length) / "data" / task / f"{SUBSET}.jsonl"
                path.parent.mkdir(parents=True, exist_ok=True)
                partial = path.with_suffix(".jsonl.part")
                partial.write_text("".join(manifest_line(r) for r in records), encoding="utf-8")
                partial.replace(path)
                written.append(path)
    finally:
        key_words.cache_clear()  # half a gigabyte, made once for all the tasks
    return written
