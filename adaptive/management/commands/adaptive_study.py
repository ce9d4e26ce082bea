"""python manage.py adaptive_study plan --name N --judge J --systems A,B,C
    [--goal means --width 1.0 | --goal ranking --probability 0.95
     | --goal alt_test --epsilon 0.2 [--max-looks 5] [--raters-per-item 3]]
    [--population crowd|gold] [--uncertainty-judge J2 | --defer-at 0.2] [--prior-humans H]
    --budget-gbp 300 [--days 7] [--hourly-gbp 9] [--minutes-per-item 2]
    [--draws-per-wave 100] [--send-rate 0.3] [--floor 0.5] [--min-labels 30]
    [--design uniform|ppi|adaptive]
    [--dataset-version qa --split test2 --language en --mode st] [--on-prolific]
    [--project SLUG]
python manage.py adaptive_study start|stop|show|step NAME [--project SLUG]
python manage.py adaptive_study budget NAME GBP
python manage.py adaptive_study deadline NAME YYYY-MM-DDTHH:MM

An adaptive human study from the command line (adaptive.loop): plan it
(nothing is spent; the plan is printed: the design it will run, why, and
what each design was expected to pay; `--design` overrides the plan's
choice, a recorded decision), start it, stop it, change its budget
or deadline (each a recorded decision), take one step of the loop by hand,
or show where it stands. The worker takes the steps by itself."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from users.commands import add_project_argument, command_project, in_project, named_project, where


class Command(BaseCommand):
    help = "Plan, start, stop, step or show an adaptive human study."

    def add_arguments(self, parser: CommandParser) -> None:
        from adaptive.models import AdaptiveStudy

        parser.add_argument(
            "action", choices=["plan", "start", "stop", "show", "step", "budget", "deadline"]
        )
        parser.add_argument("name", nargs="?", help="The study (all but plan).")
        parser.add_argument("value", nargs="?", help="budget: GBP; deadline: a date and time.")
        parser.add_argument("--name", dest="new_name")
        parser.add_argument("--goal", choices=["means", "ranking", "alt_test"], default="means")
        parser.add_argument("--epsilon", type=float, help="Alt-test goal: the margin.")
        parser.add_argument("--max-looks", type=int, default=5)
        parser.add_argument("--raters-per-item", type=int, default=3)
        parser.add_argument("--width", type=float)
        parser.add_argument("--probability", type=float)
        parser.add_argument("--population", choices=["crowd", "gold"], default="crowd")
        parser.add_argument("--judge")
        parser.add_argument("--uncertainty-judge")
        parser.add_argument(
            "--defer-at",
            type=float,
            choices=[0.1, 0.2, 0.3],
            help="Send what the judge defers at agreement 1 - this more often (the report's "
            "deferring judge) instead of sampling by disagreement or spread.",
        )
        parser.add_argument("--prior-humans")
        parser.add_argument("--systems", help="Comma-separated system names.")
        parser.add_argument("--budget-gbp")
        parser.add_argument("--days", type=float, default=7)
        parser.add_argument("--hourly-gbp", default="9.00")
        parser.add_argument("--minutes-per-item", type=float, default=2.0)
        parser.add_argument("--draws-per-wave", type=int, default=100)
        parser.add_argument("--send-rate", type=float, default=0.3)
        parser.add_argument(
            "--floor", type=float, default=AdaptiveStudy._meta.get_field("floor").default
        )
        parser.add_argument(
            "--design",
            choices=["uniform", "ppi", "adaptive"],
            default="",
            help="Run this design, not the plan's choice (means and ranking goals).",
        )
        parser.add_argument("--min-labels", type=int, default=30)
        parser.add_argument("--dataset-version", default="qa")
        parser.add_argument("--split", default="test2")
        parser.add_argument("--language", default="en")
        parser.add_argument("--mode", default="st")
        parser.add_argument("--on-prolific", action="store_true")
        add_project_argument(parser, default="the default project; other actions: any")

    def handle(self, *args: str, **options: Any) -> None:
        from adaptive import changes, loop
        from adaptive.errors import AdaptiveError
        from adaptive.models import AdaptiveStudy

        action = options["action"]
        try:
            if action == "plan":
                adaptive = self.plan(options)
                self.stdout.write(adaptive.plan["summary"])
                for name, d in (adaptive.plan.get("designs") or {}).items():
                    self.stdout.write(
                        f"  {name}: {d['paid_median']:.0f} paid places expected "
                        f"({d['paid_p95']:.0f} in the worst 1 of 20), coverage "
                        f"{d['coverage']:.2f}, answered in {d['answered']:.0%}"
                        + (" <- runs" if name == adaptive.design else "")
                    )
                for assumption in adaptive.plan["assumptions"]:
                    self.stdout.write(f"Assumed: {assumption}.")
                return
            name = options["name"]
            project = named_project(options)
            adaptive = in_project(
                AdaptiveStudy.objects.filter(name=name), project, shared=False
            ).first()
            if adaptive is None:
                raise CommandError(f"No adaptive study named {name!r}{where(project)}.")
            if action == "start":
                loop.check_start(adaptive)
            elif action == "stop":
                changes.check_stop(adaptive, None, "from the command line")
            elif action == "step":
                self.stdout.write(loop.check_advance(adaptive.pk))
            elif action == "budget":
                changes.check_change_budget(adaptive, pounds(options["value"]), None)
            elif action == "deadline":
                when = parse_datetime(options["value"] or "")
                if when is None:
                    raise CommandError("deadline: a date and time such as 2027-01-31T18:00.")
                if timezone.is_naive(when):
                    when = timezone.make_aware(when)
                changes.check_change_deadline(adaptive, when, None)
        except AdaptiveError as error:
            raise CommandError(str(error)) from None
        adaptive.refresh_from_db()
        self.show(adaptive)

    def plan(self, options: dict) -> Any:
        from adaptive import loop
        from adaptive.models import AdaptiveStudy
        from corpus.models import Dataset
        from generation.models import System
        from judging.models import Evaluator

        project = command_project(options)

        def evaluator(name: str | None, what: str) -> Evaluator | None:
            if not name:
                return None
            found = in_project(Evaluator.objects.filter(name=name), project).first()
            if found is None:
                raise CommandError(f"{what}: no evaluator named {name!r}{where(project)}.")
            return found

        if not options["new_name"] or not options["judge"] or not options["systems"]:
            raise CommandError("plan needs --name, --judge, --systems and --budget-gbp.")
        names = [n.strip() for n in options["systems"].split(",") if n.strip()]
        systems = list(in_project(System.objects.filter(name__in=names), project))
        unknown = sorted(set(names) - {s.name for s in systems})
        if unknown:
            raise CommandError(f"No such systems{where(project)}: {', '.join(unknown)}.")
        dataset = Dataset.objects.filter(
            version=options["dataset_version"],
            split=options["split"],
            language=options["language"],
        ).first()
        if dataset is None:
            raise CommandError("No dataset with that version, split and language.")
        adaptive = AdaptiveStudy(
            project=project,
            name=options["new_name"],
            goal=options["goal"],
            half_width=options["width"],
            probability=options["probability"],
            epsilon=options["epsilon"],
            max_looks=options["max_looks"],
            raters_per_item=options["raters_per_item"],
            population=options["population"],
            dataset=dataset,
            mode=options["mode"],
            judge=evaluator(options["judge"], "--judge"),
            uncertainty_judge=evaluator(options["uncertainty_judge"], "--uncertainty-judge"),
            defer_at=options["defer_at"],
            prior_humans=evaluator(options["prior_humans"], "--prior-humans"),
            budget_pence=pounds(options["budget_gbp"]),
            deadline=timezone.now() + timedelta(days=options["days"]),
            hourly_pay=Decimal(str(pounds(options["hourly_gbp"]) / 100)),
            minutes_per_item=options["minutes_per_item"],
            draws_per_wave=options["draws_per_wave"],
            send_rate=options["send_rate"],
            floor=options["floor"],
            min_labels=options["min_labels"],
            design=options["design"],
            on_prolific=options["on_prolific"],
        )
        return loop.check_create(adaptive, systems)

    def show(self, adaptive: Any) -> None:
        from adaptive.estimates import estimates

        self.stdout.write(f"{adaptive.name}: {adaptive.get_status_display()}")
        if adaptive.stop_reason:
            self.stdout.write(f"Stopped: {adaptive.stop_reason}")
        if adaptive.report:
            self.stdout.write(adaptive.report["answer"])
        elif adaptive.status != adaptive.Status.PLANNED:
            for e in estimates(adaptive):
                self.stdout.write(
                    json.dumps(
                        {
                            k: round(v, 3) if isinstance(v, float) else v
                            for k, v in e.as_dict().items()
                        }
                    )
                )


def pounds(value: str | None) -> int:
    """An amount in GBP such as 250 or 9.50, in pence."""
    try:
        amount = Decimal(value or "")
    except InvalidOperation:
        raise CommandError(f"{value!r}: an amount such as 250 or 9.50.") from None
    if not amount.is_finite() or amount < 0 or amount > 1_000_000:
        raise CommandError(f"{value!r}: an amount from 0 to 1,000,000.")
    return int(amount * 100)
