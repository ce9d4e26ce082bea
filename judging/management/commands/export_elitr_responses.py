"""python manage.py export_elitr_responses --runs 12,13 [--evaluators gpt-4-eval,...]
--output FOLDER [--project SLUG]"""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from generation.models import GenerationRun
from judging.exports import dumps, export_runs, file_name
from users.commands import add_project_argument, in_project, named_project, where


class Command(BaseCommand):
    help = (
        "Write generation runs (one dataset and mode) with their scores in the ELITR-Bench "
        "JSON layout of generated-responses/*.json."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--runs", required=True, help="Comma-separated run ids.")
        parser.add_argument("--evaluators", default="", help="Scores to include, by name.")
        parser.add_argument("--output", required=True, help="Folder to write the file in.")
        add_project_argument(parser, default="any project")

    def handle(self, *args: Any, **options: Any) -> None:
        ids = [int(i) for i in options["runs"].split(",") if i.strip().isdigit()]
        project = named_project(options)
        runs = list(
            in_project(
                GenerationRun.objects.filter(pk__in=ids), project, shared=False
            ).select_related("dataset", "system")
        )
        missing = sorted(set(ids) - {r.pk for r in runs})
        if missing or not ids:
            raise CommandError(f"No such run(s){where(project)}: {missing or options['runs']}.")
        evaluators = [e.strip() for e in options["evaluators"].split(",") if e.strip()]
        folder = Path(options["output"])
        if not folder.is_dir():
            raise CommandError(f"{folder}: no such folder.")
        try:
            data = export_runs(runs, evaluators)
        except ValueError as error:
            raise CommandError(str(error)) from None
        path = folder / file_name(runs[0], evaluators)
        path.write_text(dumps(data), encoding="utf-8")
        self.stdout.write(f"Wrote {path}")
