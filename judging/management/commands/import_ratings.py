"""python manage.py import_ratings FILE.csv|FILE.jsonl [--project SLUG]
(schema in judging/external.py)"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from corpus.importers import ImportFailure
from judging.external import import_external_ratings
from users.commands import add_project_argument, named_project
from users.models import default_project


class Command(BaseCommand):
    help = (
        "Import ratings collected elsewhere (CSV or JSONL: response or its natural key, "
        "evaluator, rater, score[, scale]) as judgments of imported evaluators."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        add_project_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        named = named_project(options)  # an unknown --project is refused first
        try:
            # one transaction: a refused file leaves no default project made for it either
            with transaction.atomic():
                counts = import_external_ratings(options["file"], named or default_project())
        except ImportFailure as failure:
            raise CommandError(
                f"{failure}\nNothing was imported; the database is unchanged."
            ) from None
        for name, count in counts.items():
            self.stdout.write(
                f"{name}: {count.created} created, {count.updated} updated, "
                f"{count.unchanged} unchanged"
            )
        if not any(c.changed for c in counts.values()):
            self.stdout.write("Nothing changed: the database already held these ratings.")
