"""python manage.py judge --evaluator NAME --split test2 [--dataset-version qa] [--mode st]
[--systems A,B] [--language en] [--now]"""

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from corpus.models import Dataset
from generation.models import System
from judging.models import Evaluator
from judging.runs import JudgingError, ensure_metric_evaluators, run_metric_judging, start_run
from judging.tasks import run_judging


class Command(BaseCommand):
    help = (
        "Judge responses with an evaluator. Automatic metrics ('metric: rouge', "
        "'metric: f1', 'metric: exact match') need no key. Queued for a Celery worker, "
        "or run here with --now."
    )

    def add_arguments(self, parser):
        parser.add_argument("--evaluator", required=True)
        parser.add_argument("--benchmark", default="elitr-bench")
        parser.add_argument("--dataset-version", default="qa", choices=("qa", "conv"))
        parser.add_argument("--language", default="en")
        parser.add_argument("--split", required=True)
        parser.add_argument("--mode", default="st", choices=("st", "mt"))
        parser.add_argument("--systems", help="Comma-separated system names (default: all).")
        parser.add_argument("--now", action="store_true", help="Run in this process.")

    def handle(self, *args, **options):
        ensure_metric_evaluators()
        evaluator = Evaluator.objects.filter(name=options["evaluator"]).first()
        if evaluator is None:
            known = ", ".join(Evaluator.objects.values_list("name", flat=True))
            raise CommandError(f"No evaluator {options['evaluator']!r}; known: {known}.")
        dataset = Dataset.objects.filter(
            benchmark__slug=options["benchmark"],
            version=options["dataset_version"],
            language=options["language"],
            split=options["split"],
        ).first()
        if dataset is None:
            raise CommandError("No such dataset (benchmark, version, language, split).")
        names = [n.strip() for n in (options["systems"] or "").split(",") if n.strip()]
        systems = list(System.objects.filter(name__in=names))
        missing = sorted(set(names) - {s.name for s in systems})
        if missing:
            raise CommandError(f"Unknown system(s): {', '.join(missing)}.")
        try:
            run = start_run(evaluator, dataset, options["mode"], systems)
        except JudgingError as error:
            raise CommandError(str(error)) from None
        if options["now"]:
            run = run_metric_judging(run.pk)
            self.stdout.write(
                f"Run {run.pk}: {run.done}/{run.total} judged, {run.failed} failed ({run.status})."
            )
            if run.message:
                self.stdout.write(run.message)
            return
        transaction.on_commit(lambda: run_judging.delay(run.pk))
        self.stdout.write(
            f"Run {run.pk} queued: {run.total} responses. A Celery worker runs it; "
            "progress in the admin (Judging > Judging runs)."
        )
