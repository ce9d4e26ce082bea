"""python manage.py sweep --name NAME --system BASE --split dev [--mode st]
[--grid '{"temperature": [0, 0.6]}' | --paper-grid] [--seeds 2023,2024,2025] [--project SLUG]
[--now]"""

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.choices import Mode
from corpus.services import DatasetChoiceError, add_dataset_arguments, dataset_from_options
from generation.models import System
from generation.runner import GenerationError, run_generation
from generation.sweeps import PAPER_GRID, enqueue_sweep, launch_sweep
from users.commands import add_project_argument, command_project, in_project, where


class Command(BaseCommand):
    help = (
        "Launch a configuration sweep or a multi-seed run as one object: one system per "
        "grid point, one run per seed. See the grid once judged with sweep_report."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True)
        parser.add_argument("--system", required=True, help="The base system.")
        add_dataset_arguments(parser, default_split="dev")
        parser.add_argument("--mode", default=Mode.SINGLE_TURN, choices=Mode.values)
        parser.add_argument("--grid", default="{}", help="JSON: setting -> list of values.")
        parser.add_argument(
            "--paper-grid",
            action="store_true",
            help="Decoding x chat template x QA markers (Appendix A.2).",
        )
        parser.add_argument("--seeds", default="2023")
        parser.add_argument("--now", action="store_true", help="Run in this process.")
        add_project_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        project = command_project(options)
        base = in_project(System.objects.filter(name=options["system"]), project).first()
        if base is None:
            raise CommandError(f"No system {options['system']!r}{where(project)}.")
        try:
            dataset = dataset_from_options(options)
        except DatasetChoiceError as error:
            raise CommandError(str(error)) from None
        try:
            grid = PAPER_GRID if options["paper_grid"] else json.loads(options["grid"])
            seeds = [int(s) for s in options["seeds"].split(",") if s.strip()]
        except (json.JSONDecodeError, ValueError) as error:
            raise CommandError(f"--grid is JSON, --seeds integers: {error}") from None
        if not isinstance(grid, dict):
            raise CommandError("--grid is a JSON object.")
        try:
            sweep = launch_sweep(
                options["name"], base, dataset, options["mode"], grid, seeds, project=project
            )
        except GenerationError as error:
            raise CommandError(str(error)) from None
        if options["now"]:
            for run in sweep.runs.all():
                run_generation(run.pk)
            self.stdout.write(f"Sweep {sweep.pk}: {sweep.runs.count()} runs made.")
            return
        enqueue_sweep(sweep)
        self.stdout.write(f"Sweep {sweep.pk} queued: {sweep.runs.count()} runs.")
