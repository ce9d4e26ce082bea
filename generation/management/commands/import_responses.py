"""python manage.py import_responses FILE --benchmark SLUG --split S [--system NAME]
[--task T] [--mode st|mt] [--dataset-version qa|conv] [--language en|cs] [--project SLUG]"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from corpus.choices import DatasetVersion, Language, Mode
from corpus.importers.errors import ImportFailure
from generation.response_import import import_responses, read_response_file
from users.commands import add_project_argument, named_project
from users.models import default_project


class Command(BaseCommand):
    help = (
        "Import model outputs made elsewhere, for any imported benchmark: one response per "
        "record (JSON Lines, CSV or Parquet; docs/benchmark-formats.md). Atomic, idempotent."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--benchmark", required=True)
        parser.add_argument("--split", required=True)
        parser.add_argument("--system", default="", help="For records that name none.")
        parser.add_argument("--task", default="", help="For records that name none.")
        parser.add_argument("--mode", default=Mode.SINGLE_TURN, choices=Mode.values)
        parser.add_argument(
            "--dataset-version", default=DatasetVersion.QA, choices=DatasetVersion.values
        )
        parser.add_argument("--language", default=Language.ENGLISH, choices=Language.values)
        add_project_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        named = named_project(options)  # an unknown --project is refused first
        try:
            responses = read_response_file(
                options["file"],
                system=options["system"],
                task=options["task"],
                mode=options["mode"],
            )
            # one transaction: a refused file leaves no default project made for it either
            with transaction.atomic():
                result = import_responses(
                    responses,
                    benchmark=options["benchmark"],
                    split=options["split"],
                    version=options["dataset_version"],
                    language=options["language"],
                    origin=options["file"],
                    project=named or default_project(),
                )
        except ImportFailure as failure:
            raise CommandError(
                f"{failure}\nNothing was imported; the database is unchanged."
            ) from None
        self.stdout.write(f"{len(responses)} responses in runs {', '.join(map(str, result.runs))}")
        for name, count in result.counts.items():
            self.stdout.write(
                f"  {name}: {count.created} created, {count.updated} updated, "
                f"{count.unchanged} unchanged"
            )
        if not any(c.changed for c in result.counts.values()):
            self.stdout.write("Nothing changed: the database already held these responses.")
