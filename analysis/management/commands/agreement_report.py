"""python manage.py agreement_report --format html|json|csv|csv-wide|latex --output FILE
[--dataset-version qa|conv] [--split dev|test2] [--mode st|mt] [--systems A,B]
[--evaluators X,Y] [--study ID] [--gold EVALUATOR] [--bootstrap N] [--humans X,Y]
[--epsilon E] [--alignment neg_rmse|neg_mae|accuracy|rank] [--ppi-labelled N]
[--target-width W]"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from analysis.exports import export
from analysis.render import FORMATS
from analysis.selection import Selection, SelectionError
from corpus.choices import DatasetVersion, Language, Mode


class Command(BaseCommand):
    help = "Write an agreement report (means, correlations, ICC, gold bins, breakdowns)."

    def add_arguments(self, parser):
        parser.add_argument("--format", choices=FORMATS, default="html")
        parser.add_argument("--output", required=True, help="File to write ('-': standard output).")
        parser.add_argument("--dataset-version", choices=DatasetVersion.values)
        parser.add_argument("--split")
        parser.add_argument("--mode", choices=Mode.values)
        parser.add_argument("--language", default=Language.ENGLISH)
        parser.add_argument("--benchmark", help="Benchmark slug, e.g. elitr-bench.")
        parser.add_argument("--systems", help="Comma-separated system names.")
        parser.add_argument("--evaluators", help="Comma-separated evaluator names.")
        parser.add_argument("--study", help="A human study's id: its responses only.")
        parser.add_argument("--gold", dest="gold_evaluator", help="Evaluator for the gold bins.")
        parser.add_argument(
            "--humans", help="Comma-separated human evaluators for the judge-trust section."
        )
        parser.add_argument(
            "--epsilon", help="Alt-test margin, 0-1 (default: 0.2 experts, 0.1 crowd workers)."
        )
        parser.add_argument(
            "--alignment", help="Alt-test alignment: neg_rmse, neg_mae, accuracy or rank."
        )
        parser.add_argument(
            "--ppi-labelled", help="Gold ratings per system PPI keeps when all have gold (40)."
        )
        parser.add_argument(
            "--target-width", help="Planner: target 95%% CI width on a system mean (1.0)."
        )
        parser.add_argument(
            "--bootstrap",
            type=int,
            default=0,
            help="Bootstrap resamples for correlation CIs (0: none).",
        )

    def handle(self, *args, **options):
        try:
            selection = Selection.from_options(options)
            if options["bootstrap"] < 0:
                raise SelectionError("--bootstrap must be 0 or more.")
            text = export(selection, options["format"], bootstrap=options["bootstrap"])
        except SelectionError as error:
            raise CommandError(str(error)) from None
        if options["output"] == "-":
            self.stdout.write(text)
            return
        output = Path(options["output"])
        if output.parent and not output.parent.exists():
            raise CommandError(f"{output.parent}: no such folder.")
        output.write_text(text, encoding="utf-8")
        self.stdout.write(f"Wrote {options['format']} report to {output} ({len(text)} characters).")
