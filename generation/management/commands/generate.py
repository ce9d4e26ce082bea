"""python manage.py generate --system NAME --split test2 [--benchmark SLUG] [--task T[,T...]]
[--dataset-version qa] [--mode st] [--seed 2023] [--language en] [--project SLUG] [--now]

A run per task named (a split with several tasks needs --task)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.choices import Mode
from corpus.models import Dataset
from corpus.services import DatasetChoiceError, add_dataset_arguments, datasets_from_options
from generation.models import System
from generation.runner import (
    GenerationError,
    create_generation_run,
    run_generation,
    start_generation_run,
)
from users.commands import add_project_argument, command_project, in_project, where


class Command(BaseCommand):
    help = (
        "Answer every question of a dataset with a system (a local model on a gpu worker, "
        "or an OpenAI-compatible server). Resumes a run that stopped."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--system", required=True)
        add_dataset_arguments(parser, many=True)
        parser.add_argument("--mode", default=Mode.SINGLE_TURN, choices=Mode.values)
        parser.add_argument("--seed", type=int)
        parser.add_argument("--now", action="store_true", help="Run in this process.")
        add_project_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        project = command_project(options)
        system = in_project(System.objects.filter(name=options["system"]), project).first()
        if system is None:
            raise CommandError(f"No system {options['system']!r}{where(project)}.")
        try:
            datasets = datasets_from_options(options)
        except DatasetChoiceError as error:
            raise CommandError(str(error)) from None
        for dataset in datasets:
            self.generate(system, dataset, project, options)

    def generate(self, system: System, dataset: Dataset, project, options: dict) -> None:
        start = create_generation_run if options["now"] else start_generation_run
        try:
            run = start(system, dataset, options["mode"], options["seed"], project)
        except GenerationError as error:
            raise CommandError(str(error)) from None
        task = f" ({dataset.task})" if dataset.task else ""
        if options["now"]:
            run = run_generation(run.pk)
            self.stdout.write(
                f"Run {run.pk}{task}: {run.done}/{run.total} answered ({run.status}), "
                f"{run.generated_tokens} tokens generated."
            )
            if run.message:
                self.stdout.write(run.message)
            return
        if run.status == run.Status.FAILED:
            raise CommandError(f"Run {run.pk}{task}: {run.message}")
        self.stdout.write(f"Run {run.pk}{task} queued on '{run.queue()}': {run.total} questions.")
