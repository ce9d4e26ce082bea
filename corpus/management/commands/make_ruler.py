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
from corpus.ruler.orders import BadOrder, lengths_from, ruler_order
from corpus.ruler.prepare import write_data
from corpus.ruler.tokens import UnknownTokenizer, token_counter


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
        try:
            order = ruler_order(
                options["tasks"].split(","),
                lengths_from(options["lengths"]),
                options["samples"],
                options["seed"],
                options["tokenizer"],
            )
            count = token_counter(order.tokenizer)
            written = write_data(
                options["output"], order.tasks, order.lengths, order.samples, count, order.seed
            )
        except (BadOrder, UnknownTokenizer, ValueError) as error:
            raise CommandError(str(error)) from None
        for path in written:
            self.stdout.write(f"{path}")
        self.stdout.write(f"{len(written)} task files: {order.describe()}.")
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
