"""python manage.py import_jsonl FILE --benchmark SLUG [--split S] [--dataset-version qa|conv]
[--language en|cs] [--name "Display name"]"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.choices import DatasetVersion, Language
from corpus.importers import ImportFailure
from corpus.importers.jsonl import parse_jsonl
from corpus.services import import_jsonl_benchmark


class Command(BaseCommand):
    help = (
        "Import a long-document QA benchmark from JSON Lines (one question per line; "
        "schema in docs/import-jsonl.md). Atomic and idempotent."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--benchmark", required=True, help="Slug, e.g. zeroscrolls-qasper.")
        parser.add_argument("--name", help="Display name of a new benchmark (default: the slug).")
        parser.add_argument("--split", default="test")
        parser.add_argument(
            "--dataset-version", default=DatasetVersion.QA, help=" or ".join(DatasetVersion.values)
        )
        parser.add_argument(
            "--language", default=Language.ENGLISH, help=" or ".join(Language.values)
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            bundle = parse_jsonl(
                options["file"],
                benchmark=options["benchmark"],
                benchmark_name=options["name"],
                split=options["split"],
                version=options["dataset_version"],
                language=options["language"],
            )
            counts = import_jsonl_benchmark(bundle)
        except ImportFailure as failure:
            raise CommandError(
                f"{failure}\nNothing was imported; the database is unchanged."
            ) from None
        self.stdout.write(
            f"{bundle.benchmark_name} {bundle.version} {bundle.language} {bundle.split}: "
            f"{len(bundle.documents)} documents, {len(bundle.items)} questions"
        )
        for name, count in counts.items():
            self.stdout.write(
                f"  {name}: {count.created} created, {count.updated} updated, "
                f"{count.unchanged} unchanged"
            )
        if not any(c.changed for c in counts.values()):
            self.stdout.write("Nothing changed: the database already held this data.")
