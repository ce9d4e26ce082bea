"""python manage.py judge --evaluator NAME --split test2 [--benchmark SLUG] [--task T[,T...]]
[--dataset-version qa] [--mode st]
[--systems A,B] [--language en] [--budget USD] [--refresh] [--project SLUG] [--now]
python manage.py judge --resume RUN_ID [--project SLUG] [--now]"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.choices import Mode
from corpus.services import DatasetChoiceError, add_dataset_arguments, datasets_from_options
from generation.models import System
from judging.judging_runs import (
    JudgingError,
    create_judging_run,
    ensure_metric_evaluators,
    judge_run,
    resume_run,
    start_judging_run,
)
from judging.models import Evaluator, JudgingRun
from users.commands import add_project_argument, in_project, named_project, where
from users.models import default_project


class Command(BaseCommand):
    help = (
        "Judge responses with an evaluator. Automatic metrics ('metric: rouge', "
        "'metric: f1', 'metric: exponential similarity', ...: every registered metric) "
        "need no key. Queued for a Celery worker, or run here with --now."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--evaluator", help="Evaluator name (see the admin).")
        parser.add_argument(
            "--resume",
            type=int,
            metavar="RUN_ID",
            help="Go on with a cancelled, failed or interrupted run.",
        )
        parser.add_argument(
            "--budget",
            type=float,
            help="Never spend more than this: the run stops before a request could pass it.",
        )
        parser.add_argument(
            "--confirm-over-budget",
            action="store_true",
            help="Start even when the projected cost is above the budget.",
        )
        parser.add_argument(
            "--refresh",
            action="store_true",
            help="Call again even when the ledger holds the same request.",
        )
        add_dataset_arguments(parser, split_required=False, many=True)
        parser.add_argument("--mode", default=Mode.SINGLE_TURN, choices=Mode.values)
        parser.add_argument("--systems", help="Comma-separated system names (default: all).")
        parser.add_argument("--now", action="store_true", help="Run in this process.")
        parser.add_argument(
            "--batch",
            action="store_true",
            help="Use the OpenAI Batch API (half the price; a worker polls).",
        )
        add_project_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        named = named_project(options)  # an unknown project before anything is made
        ensure_metric_evaluators()
        if options["resume"]:
            found = in_project(JudgingRun.objects.filter(pk=options["resume"]), named, shared=False)
            run = found.first()
            if run is None:
                raise CommandError(f"No run {options['resume']}{where(named)}.")
            outcome = resume_run(run, send=not (options["now"] and not run.use_batch))
            if not outcome.changed:
                raise CommandError(outcome.detail)
            if not options["now"] or run.use_batch:
                self.stdout.write(outcome.detail)
                return None
            return self.finish(run, options)
        if not options["evaluator"] or not options["split"]:
            raise CommandError("Give --evaluator and --split (or --resume RUN_ID).")
        project = named or default_project()
        evaluators = in_project(Evaluator.objects.all(), project)
        evaluator = evaluators.filter(name=options["evaluator"]).first()
        if evaluator is None:
            known = ", ".join(evaluators.values_list("name", flat=True))
            raise CommandError(
                f"No evaluator {options['evaluator']!r}{where(project)}; known: {known}."
            )
        try:
            datasets = datasets_from_options(options)
        except DatasetChoiceError as error:
            raise CommandError(str(error)) from None
        names = [n.strip() for n in (options["systems"] or "").split(",") if n.strip()]
        systems = list(in_project(System.objects.filter(name__in=names), project))
        missing = sorted(set(names) - {s.name for s in systems})
        if missing:
            raise CommandError(f"Unknown system(s){where(project)}: {', '.join(missing)}.")
        start = create_judging_run if options["now"] and not options["batch"] else start_judging_run
        for dataset in datasets:  # a run per task named
            try:
                run = start(
                    evaluator,
                    dataset,
                    options["mode"],
                    systems,
                    budget=options["budget"],
                    refresh=options["refresh"],
                    use_batch=options["batch"],
                    confirm_over_budget=options["confirm_over_budget"],
                    project=project,
                )
            except JudgingError as error:
                raise CommandError(str(error)) from None
            if dataset.task:
                self.stdout.write(f"Task {dataset.task}:")
            if run.projected_cost:
                self.stdout.write(f"Projected cost: {run.projected_cost:.4f}")
            self.finish(run, options)
        return None

    def finish(self, run: JudgingRun, options: dict) -> None:
        if options["now"] and not run.use_batch:
            run = judge_run(run.pk)
            self.stdout.write(
                f"Run {run.pk}: {run.done}/{run.total} judged, {run.failed} failed ({run.status}); "
                f"{run.requests} requests, {run.cache_hits} answered from the ledger, "
                f"cost {run.cost:.4f}."
            )
            if run.message:
                self.stdout.write(run.message)
            return
        if run.status == JudgingRun.Status.FAILED:
            raise CommandError(f"Run {run.pk} not started: {run.message}")
        self.stdout.write(
            f"Run {run.pk} queued: {run.total} items. A Celery worker runs it; "
            "progress in the admin (Judging > Judging runs)."
        )
