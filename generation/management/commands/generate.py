"""python manage.py generate --system NAME --split test2 [--dataset-version qa] [--mode st]
[--seed 2023] [--language en] [--now]"""

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from corpus.services import add_dataset_arguments, dataset_from_options
from generation.models import System
from generation.runner import GenerationError, queue_for, run_generation, start_generation
from generation.tasks import run_generation_task


class Command(BaseCommand):
    help = (
        "Answer every question of a dataset with a system (a local model on a gpu worker, "
        "or an OpenAI-compatible server). Resumes a run that stopped."
    )

    def add_arguments(self, parser):
        parser.add_argument("--system", required=True)
        add_dataset_arguments(parser)
        parser.add_argument("--mode", default="st", choices=("st", "mt"))
        parser.add_argument("--seed", type=int)
        parser.add_argument("--now", action="store_true", help="Run in this process.")

    def handle(self, *args, **options):
        system = System.objects.filter(name=options["system"]).first()
        if system is None:
            raise CommandError(f"No system {options['system']!r}.")
        dataset = dataset_from_options(options)
        if dataset is None:
            raise CommandError("No such dataset (benchmark, version, language, split).")
        try:
            run = start_generation(system, dataset, options["mode"], options["seed"])
        except GenerationError as error:
            raise CommandError(str(error)) from None
        if options["now"]:
            run = run_generation(run.pk)
            self.stdout.write(
                f"Run {run.pk}: {run.done}/{run.total} answered ({run.status}), "
                f"{run.generated_tokens} tokens generated."
            )
            if run.message:
                self.stdout.write(run.message)
            return
        queue = queue_for(system)
        transaction.on_commit(lambda: run_generation_task.apply_async(args=[run.pk], queue=queue))
        self.stdout.write(f"Run {run.pk} queued on '{queue}': {run.total} questions.")
