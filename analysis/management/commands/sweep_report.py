"""python manage.py sweep_report --sweep ID --evaluator gpt-4-eval [--project SLUG]"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.report.sweeps import sweep_table
from core.spreadsheet import neutralise
from generation.models import Sweep
from users.commands import add_project_argument, in_project, named_project, where


class Command(BaseCommand):
    help = "A sweep's grid once judged: mean score per configuration, mean and std over seeds."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--sweep", type=int, required=True)
        parser.add_argument("--evaluator", required=True)
        add_project_argument(parser, default="any project")

    def handle(self, *args: str, **options: Any) -> None:
        project = named_project(options)
        sweep = in_project(Sweep.objects.filter(pk=options["sweep"]), project, shared=False).first()
        if sweep is None:
            raise CommandError(f"No sweep {options['sweep']}{where(project)}.")
        rows = sweep_table(sweep, options["evaluator"])
        seeds = sorted({s for row in rows for s in row["seeds"]}, key=lambda s: (s is None, s))

        def cell(value: float | None) -> str:
            return "-" if value is None else f"{value:.2f}"

        self.stdout.write("\t".join(["system", *map(str, seeds), "mean", "std"]))
        for row in rows:
            self.stdout.write(
                "\t".join(
                    [
                        # a TSV pasted into a spreadsheet: a name must not run as a formula
                        neutralise(row["system"]),
                        *(cell(row["seeds"].get(s)) for s in seeds),
                        cell(row["mean"]),
                        cell(row["std"]),
                    ]
                )
            )
