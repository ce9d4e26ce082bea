"""python manage.py import_elitr_bench [SOURCE] [--password P] [--versions qa,conv]
[--languages en,cs] [--with-responses]"""

from __future__ import annotations

from typing import IO, Any, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from corpus.importers import ImportFailure
from corpus.importers.download import ARCHIVES
from corpus.importers.elitr_bench import ANSWER_POSITIONS, PUBLISHED_PASSWORD, QUESTION_TYPES
from judging.importing import ElitrImportSummary, import_elitr_bench, resolve_elitr_source


class Command(BaseCommand):
    help = (
        "Import ELITR-Bench (questions, references, transcripts; with --with-responses also "
        "the paper's responses and scores). SOURCE is a folder holding the official archives, "
        "an unpacked copy, the LINDAT corpus folders, or one archive. Without SOURCE: "
        "$CONCORD_ELITR_DATA, else the archives are downloaded from GitHub "
        f"({', '.join(ARCHIVES)}). The import is atomic and idempotent."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("source", nargs="?", help="Folder or archive (default: see above).")
        parser.add_argument(
            "--password",
            default=PUBLISHED_PASSWORD,
            help="Password of the zip archives (default: the one the authors publish).",
        )
        parser.add_argument("--versions", default="qa,conv", help="Comma-separated: qa, conv.")
        parser.add_argument("--languages", default="en,cs", help="Comma-separated: en, cs.")
        parser.add_argument(
            "--with-responses",
            action="store_true",
            help="Also import generated-responses/*.json: runs, responses and judgments.",
        )
        parser.add_argument(
            "--download-from",
            metavar="URL",
            help="Download the archives from this base URL instead of GitHub (a mirror).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # OutputWrapper is a text stream (a TextIOBase), which the stubs do not say is an IO[str]
        console = Console(file=cast(IO[str], self.stdout), width=110, highlight=False)
        try:
            source = resolve_elitr_source(
                options["source"], mirror=options["download_from"], report=console.print
            )
            with Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=not console.is_terminal,
            ) as bar:
                task = bar.add_task("reading", total=1)
                stages: list[str] = []

                def progress(stage: str, done: int, total: int) -> None:
                    bar.update(task, description=stage, completed=done, total=max(total, 1))
                    if not console.is_terminal and stage not in stages:
                        stages.append(stage)  # logs get one line per stage, not a bar
                        console.print(f"{stage}...")

                summary = import_elitr_bench(
                    source,
                    password=options["password"] or None,
                    versions=tuple(options["versions"].split(",")),
                    languages=tuple(options["languages"].split(",")),
                    with_responses=options["with_responses"],
                    progress=progress,
                )
        except ImportFailure as failure:
            raise CommandError(
                f"{failure}\nNothing was imported; the database is unchanged."
            ) from None
        print_summary(console, summary)


def print_summary(console: Console, summary: ElitrImportSummary) -> None:
    table = Table(title=f"ELITR-Bench from {summary.source}")
    columns = ["split", "meetings", "questions", *QUESTION_TYPES, *ANSWER_POSITIONS, "words"]
    for column in columns:
        table.add_column(column, justify="left" if column == "split" else "right")
    for row in summary.split_rows():
        table.add_row(*(str(row[c]) for c in columns))
    console.print(table)
    datasets = ", ".join(" ".join(d) for d in summary.bundle.datasets())
    console.print(f"Datasets (version language split): {datasets}")
    if summary.bundle.responses:
        console.print(
            f"Responses: {len(summary.bundle.responses)} "
            f"({summary.bundle.duplicate_responses_merged} repeated across files, stored once)"
        )
        console.print(
            "Judgments: "
            + ", ".join(f"{k} {v}" for k, v in summary.judgments_by_evaluator().items())
        )
    changes = Table(title="Database")
    for column in ("table", "created", "updated", "unchanged"):
        changes.add_column(column, justify="left" if column == "table" else "right")
    for name, count in summary.counts.items():
        changes.add_row(name, str(count.created), str(count.updated), str(count.unchanged))
    console.print(changes)
    for warning in summary.bundle.warnings:
        console.print(f"Warning: {warning}")
    if summary.changed:
        console.print(f"Imported in {summary.seconds:.1f} s.")
    else:
        console.print(
            f"Nothing changed: the database already held this data ({summary.seconds:.1f} s)."
        )
