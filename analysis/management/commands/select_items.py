"""python manage.py select_items --method disagreement|uncertainty|random --count N
--kind gold|crowd --name NAME [--raters N] [--gold-annotators A,B]
[selection options as agreement_report's]

Picks responses of a selection for humans to rate and creates a study of
exactly those (closed: open it from the admin when ready)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.management.selection_options import add_selection_arguments
from analysis.report.selection import DEFERRAL_ALPHAS, ITEM_METHODS, Selection, SelectionError


class Command(BaseCommand):
    help = "Create a gold or crowd study of the responses the judges are least sure of."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--method", choices=ITEM_METHODS, required=True)
        parser.add_argument("--count", type=int, required=True, help="Responses to pick.")
        parser.add_argument("--kind", choices=("gold", "crowd"), required=True)
        parser.add_argument("--name", required=True, help="The new study's name.")
        parser.add_argument("--raters", type=int, default=1, help="Raters per task (1).")
        add_selection_arguments(parser, reference_help="The reference evaluator.")
        parser.add_argument("--judges", help="Comma-separated judges (default: every non-human).")
        parser.add_argument("--humans", help="Comma-separated human evaluators (not judges).")
        parser.add_argument(
            "--judge", default="", help="Method deferred: the judge whose abstentions to rate."
        )
        parser.add_argument(
            "--alpha",
            type=float,
            choices=DEFERRAL_ALPHAS,
            default=0.2,
            help="Method deferred: the target agreement 1 - alpha whose threshold defers (0.2).",
        )
        parser.add_argument(
            "--gold-annotators",
            default="",
            help="A gold study's gold annotators, comma-separated usernames (they see only "
            "the studies they are assigned to).",
        )

    def handle(self, *args: str, **options: Any) -> None:
        from analysis.planning.items_for_humans import create_study
        from annotator.errors import StudyError

        if not 1 <= options["raters"] <= 1000:
            raise CommandError("--raters: from 1 to 1000.")
        try:
            study = create_study(
                Selection.from_options(options),
                method=options["method"],
                count=options["count"],
                kind=options["kind"],
                name=options["name"],
                raters_per_task=options["raters"],
                gold_annotators=tuple(options["gold_annotators"].split(",")),
                judge=options["judge"],
                alpha=options["alpha"],
            )
        except (SelectionError, StudyError) as error:
            raise CommandError(str(error)) from None
        items = study.items.filter(kind="response").count()
        self.stdout.write(
            f"Created the {study.kind} study '{study.name}' (#{study.pk}): {items} responses "
            f"picked by {options['method']}, {study.raters_per_task} rater(s) per task. "
            "It is closed: open it from the admin when ready."
        )
