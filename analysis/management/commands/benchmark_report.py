"""python manage.py benchmark_report --benchmark zeroscrolls --split validation
[--format table|json|csv|parquet] [--output FILE] [--project SLUG]"""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.report.benchmark_exports import FORMATS, as_bytes
from analysis.report.benchmark_report import benchmark_report
from users.commands import add_project_argument, named_project


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
        add_project_argument(parser, default="every project")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            project = named_project(options)
            report = benchmark_report(
                options["benchmark"],
                options["split"],
                None if project is None else [project.pk],
            )
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
