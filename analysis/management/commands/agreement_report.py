"""python manage.py agreement_report --format html|json|csv|csv-wide|latex --output FILE
[--dataset-version qa|conv] [--split dev|test2] [--mode st|mt] [--language en]
[--benchmark SLUG] [--systems A,B] [--evaluators X,Y] [--study ID] [--judges X,Y]
[--humans X,Y] [--reference EVALUATOR] [--epsilon E]
[--alignment neg_rmse|neg_mae|accuracy|rank] [--ppi-labels EVALUATOR] [--ppi-labelled N]
[--target-width W] [--include-flagged] [--bootstrap N] [--project SLUG]

The same selection as the report page's parameters; with none, the default
selection (the setting where the human scores are), stated in the report."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.management.selection_options import add_selection_arguments
from analysis.report.exports import export
from analysis.report.render import FORMATS
from analysis.report.selection import PARAMETERS, Selection, SelectionError


def selection_of(options: dict) -> Selection:
    """The command's selection; with no selection option but --project, the
    default one (in that project)."""
    if not any(options.get(name) not in (None, False) for name in PARAMETERS if name != "project"):
        from analysis.report.scope import check, default_selection

        named = Selection.from_options({"project": options.get("project")})
        check(named)  # an unknown project is named as such
        return default_selection(named.project)
    return Selection.from_options(options)


class Command(BaseCommand):
    help = "Write an agreement report (means, correlations, ICC, gold bins, breakdowns)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--format", choices=FORMATS, default="html")
        parser.add_argument("--output", required=True, help="File to write ('-': standard output).")
        add_selection_arguments(
            parser,
            reference_help="The evaluator correlations and rankings are read against (default: "
            "the human evaluator covering most of the selection).",
        )
        parser.add_argument(
            "--judges", help="Comma-separated judges to assess (default: every non-human one)."
        )
        parser.add_argument(
            "--humans", help="Comma-separated human evaluators for the judge-trust section."
        )
        parser.add_argument(
            "--ppi-labels", help="The evaluator whose ratings are PPI's labelled set (reference)."
        )
        parser.add_argument(
            "--include-flagged",
            action="store_true",
            help="Count raters flagged by quality control (default: left out).",
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

    def handle(self, *args: str, **options: Any) -> None:
        try:
            selection = selection_of(options)
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
