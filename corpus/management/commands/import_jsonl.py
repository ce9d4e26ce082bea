"""python manage.py import_jsonl FILE --benchmark SLUG [--split S] [--task T]
[--dataset-version qa|conv] [--language en|cs] [--name "Display name"]

The generic format of `import_benchmark` (one question per record; JSON
Lines, CSV or Parquet), under its first name."""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from corpus.management.commands.import_benchmark import add_benchmark_options, run_import


class Command(BaseCommand):
    help = (
        "Import a long-document QA benchmark, one question per record (JSON Lines, CSV or "
        "Parquet; schema in docs/benchmark-formats.md). Atomic and idempotent."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_benchmark_options(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        run_import(self, "generic", options)
