"""python manage.py export_leaderboard --runs 12,13 --output FOLDER [--partial] [--project SLUG]

L-Eval runs: a `Predictions/<model>/<task>.pred.jsonl` per run under FOLDER,
as `Evaluation/auto_eval.py --pred_file` reads them. ZeroSCROLLS runs (one
system, one per task): FOLDER/zero_scrolls_predictions.csv, the leaderboard's
submission (all ten tasks, or fewer with --partial). LongBench v2 runs:
`results/<model>.jsonl` per run, as pred.py writes it for result.py. RULER
runs: `<model>/synthetic/<length>/pred/<task>.jsonl`. BABILong runs:
`<model>/<task>_<length>_<prompt>.csv`, as collect_results.py reads them.
LooGLE runs: `Output/<task>_<model>.jsonl`, as automatic_eval.py reads them."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from generation.models import GenerationRun
from judging.leaderboard_exports import (
    PER_RUN,
    ExportFile,
    ExportRefused,
    leaderboard_of,
    zeroscrolls_submission,
)
from users.commands import add_project_argument, in_project, named_project, where


class Command(BaseCommand):
    help = (
        "Write generation runs in their leaderboard's shape: L-Eval prediction files, or "
        "ZeroSCROLLS' submission CSV."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--runs", required=True, help="Comma-separated run ids.")
        parser.add_argument("--output", required=True, help="Folder to write in.")
        parser.add_argument(
            "--partial",
            action="store_true",
            help="ZeroSCROLLS: write the tasks given even if not all ten (not a submission).",
        )
        add_project_argument(parser, default="any project")

    def handle(self, *args: Any, **options: Any) -> None:
        wanted = [part.strip() for part in options["runs"].split(",") if part.strip()]
        if not wanted or not all(part.isdigit() for part in wanted):
            raise CommandError(f"--runs: run ids separated by commas, not {options['runs']!r}.")
        ids = [int(part) for part in wanted]
        project = named_project(options)
        runs = list(
            in_project(GenerationRun.objects.filter(pk__in=ids), project, shared=False)
            .select_related("dataset__benchmark", "system")
            .order_by("pk")
        )
        missing = sorted(set(ids) - {r.pk for r in runs})
        if missing:
            raise CommandError(f"No such run(s){where(project)}: {missing}.")
        folder = Path(options["output"])
        if not folder.is_dir():
            raise CommandError(f"{folder}: no such folder.")
        shapes = {leaderboard_of(run) for run in runs}
        if None in shapes or len(shapes) > 1:
            raise CommandError(
                "Export runs of one leaderboard's benchmark at a time (L-Eval, ZeroSCROLLS, "
                "LongBench v2, RULER, BABILong or LooGLE); "
                "these are on " + ", ".join(sorted({str(r.dataset) for r in runs})) + "."
            )
        try:
            (shape,) = shapes
            if shape in PER_RUN:
                files = [PER_RUN[shape](run) for run in runs]
            else:
                files = [zeroscrolls_submission(runs, partial=options["partial"])]
        except ExportRefused as error:
            raise CommandError(str(error)) from None
        for file in files:
            self.write(folder, file)

    def write(self, folder: Path, file: ExportFile) -> None:
        path = folder / file.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(file.content)
        self.stdout.write(f"Wrote {path}")
