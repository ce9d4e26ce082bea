"""python manage.py import_benchmark FILE --format generic|leval|zeroscrolls|longbench_v2|ruler
[--benchmark SLUG] [--name NAME] [--split S] [--task T] [--dataset-version qa|conv]
[--language en|cs]"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.choices import DatasetVersion, Language
from corpus.importers import ImportFailure
from corpus.importers.formats import READERS, read_benchmark
from corpus.services import import_benchmark

DEFAULT_SLUGS = {
    "leval": "leval",
    "zeroscrolls": "zeroscrolls",
    "longbench_v2": "longbench_v2",
    "ruler": "ruler",
    "babilong": "babilong",
    "loogle": "loogle",
}
DEFAULT_SPLITS = {"zeroscrolls": "validation", "ruler": "validation"}


def add_benchmark_options(parser: CommandParser) -> None:
    parser.add_argument("file")
    parser.add_argument("--benchmark", help="Slug (default: leval, zeroscrolls).")
    parser.add_argument("--name", help="Display name of a new benchmark.")
    parser.add_argument("--split", help="Default: test (ZeroSCROLLS: validation).")
    parser.add_argument(
        "--task", default="", help="Default: the file's name (L-Eval, ZeroSCROLLS)."
    )
    parser.add_argument(
        "--dataset-version", default=DatasetVersion.QA, help=" or ".join(DatasetVersion.values)
    )
    parser.add_argument("--language", default=Language.ENGLISH, help=" or ".join(Language.values))


def run_import(command: BaseCommand, format: str, options: dict[str, Any]) -> None:
    """Read the file in `format`, write it, print what changed."""
    slug = options["benchmark"] or DEFAULT_SLUGS.get(format)
    if not slug:
        raise CommandError("Give --benchmark SLUG (e.g. --benchmark my-benchmark).")
    try:
        bundle = read_benchmark(
            format,
            options["file"],
            benchmark=slug,
            benchmark_name=options["name"],
            split=options["split"] or DEFAULT_SPLITS.get(format, "test"),
            version=options["dataset_version"],
            language=options["language"],
            task=options["task"],
        )
        counts = import_benchmark(bundle)
    except ImportFailure as failure:
        raise CommandError(f"{failure}\nNothing was imported; the database is unchanged.") from None
    tasks = ", ".join(t for t in bundle.tasks() if t) or "one task"
    command.stdout.write(
        f"{bundle.name} {bundle.version} {bundle.language} {bundle.split} ({tasks}): "
        f"{len(bundle.documents)} documents, {len(bundle.items)} questions"
    )
    for name, count in counts.items():
        command.stdout.write(
            f"  {name}: {count.created} created, {count.updated} updated, "
            f"{count.unchanged} unchanged"
        )
    if not any(c.changed for c in counts.values()):
        command.stdout.write("Nothing changed: the database already held this data.")


class Command(BaseCommand):
    help = (
        "Import a benchmark from its authors' files: generic (one question per record, "
        "JSON Lines, CSV or Parquet), leval (L-Eval's task files), zeroscrolls (ZeroSCROLLS "
        "rows, JSON Lines or Parquet), longbench_v2 (its data.json), ruler (RULER's data "
        "folder or one task file), babilong (BABILong's files from the Hub) or loogle "
        "(LooGLE's task files). Atomic and idempotent; docs/benchmark-formats.md."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_benchmark_options(parser)
        parser.add_argument("--format", required=True, choices=sorted(READERS))

    def handle(self, *args: Any, **options: Any) -> None:
        run_import(self, options["format"], options)
