"""python manage.py benchmark_report --benchmark zeroscrolls --split validation
[--format table|json|csv|parquet] [--output FILE]"""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.benchmark_exports import FORMATS, as_bytes
from analysis.benchmark_report import benchmark_report


class Command(BaseCommand):
    help = (
        "A benchmark's task scores in its authors' shape (0-100, the average over tasks), "
        "pairwise win rates against the baseline and Kendall's tau with human scores."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--benchmark", required=True)
        parser.add_argument("--split", required=True)
        parser.add_argument("--format", default="table", choices=FORMATS)
        parser.add_argument("--output", type=Path)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = benchmark_report(options["benchmark"], options["split"])
        except ValueError as error:
            raise CommandError(str(error)) from None
        data = as_bytes(report, options["format"])
        if options["output"]:
            options["output"].write_bytes(data)
            self.stdout.write(f"Wrote {options['output']} ({len(data)} bytes).")
        elif options["format"] == "parquet":
            raise CommandError("Parquet is binary: give --output FILE.")
        else:
            self.stdout.write(data.decode(), ending="")
