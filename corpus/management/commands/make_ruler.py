"""python manage.py make_ruler --output DIR [--tasks niah_single_1,vt,...]
[--lengths 4096,8192,16384] [--samples 500] [--seed 42]
[--tokenizer tiktoken:cl100k_base | hf:/models/llama] [--import]

RULER's tasks at the lengths asked for, as its authors' scripts make them
(corpus.ruler): the data folder run.sh writes (`<length>/data/<task>/
validation.jsonl`), then, with --import, the benchmark `ruler` from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.ruler.constants import NUM_SAMPLES, RANDOM_SEED, TASKS
from corpus.ruler.prepare import write_data
from corpus.ruler.tokens import UnknownTokenizer, token_counter

MOST_SAMPLES = 10_000


def _positive_list(value: str, name: str) -> list[int]:
    try:
        numbers = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise CommandError(
            f"--{name} {value!r}: whole numbers with commas, e.g. 4096,8192."
        ) from None
    if not numbers or any(n <= 0 for n in numbers):
        raise CommandError(f"--{name} {value!r}: positive whole numbers, e.g. 4096,8192.")
    return numbers


class Command(BaseCommand):
    help = (
        "Make RULER's tasks at chosen lengths as its authors' scripts do (seeded), in the data "
        "folder its run.sh writes; --import imports them as the benchmark 'ruler'."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", type=Path, required=True, help="The data folder.")
        parser.add_argument("--tasks", default=",".join(TASKS), help=", ".join(TASKS))
        parser.add_argument("--lengths", default="4096,8192,16384", help="Tokens, with commas.")
        parser.add_argument("--samples", type=int, default=NUM_SAMPLES, help="Per task and length.")
        parser.add_argument("--seed", type=int, default=RANDOM_SEED)
        parser.add_argument(
            "--tokenizer",
            default="tiktoken:cl100k_base",
            help="What the lengths count: tiktoken:<encoding> or hf:<a local model folder>.",
        )
        parser.add_argument("--import", dest="import_", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        tasks = [t.strip() for t in options["tasks"].split(",") if t.strip()]
        unknown = [t for t in tasks if t not in TASKS]
        if unknown or not tasks:
            raise CommandError(
                f"--tasks {options['tasks']!r}: made here are {', '.join(TASKS)} (the others "
                "need the authors' downloads; import the files their scripts make)."
            )
        lengths = _positive_list(options["lengths"], "lengths")
        if not 0 < options["samples"] <= MOST_SAMPLES:
            raise CommandError(f"--samples: from 1 to {MOST_SAMPLES}.")
        try:
            count = token_counter(options["tokenizer"])
            written = write_data(
                options["output"], tasks, lengths, options["samples"], count, options["seed"]
            )
        except (UnknownTokenizer, ValueError) as error:
            raise CommandError(str(error)) from None
        for path in written:
            self.stdout.write(f"{path}")
        self.stdout.write(
            f"{len(written)} task files: {len(tasks)} tasks x {len(lengths)} lengths, "
            f"{options['samples']} samples each, seed {options['seed']}, {options['tokenizer']}."
        )
        if options["import_"]:
            from corpus.management.commands.import_benchmark import run_import

            run_import(
                self,
                "ruler",
                {
                    "file": str(options["output"]),
                    "benchmark": None,
                    "name": None,
                    "split": None,
                    "dataset_version": "qa",
                    "language": "en",
                    "task": "",
                },
            )
