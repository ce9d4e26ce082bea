"""The selection options the analysis commands share (agreement_report,
select_items, plan_study): what data a command reads, as the report's URL
parameters name it (analysis.report.selection.Selection.from_options reads them)."""

from __future__ import annotations

from django.core.management.base import CommandParser

from corpus.choices import DatasetVersion, Language, Mode


def add_selection_arguments(parser: CommandParser, *, reference_help: str) -> None:
    parser.add_argument("--dataset-version", choices=DatasetVersion.values)
    parser.add_argument("--split")
    parser.add_argument("--mode", choices=Mode.values)
    parser.add_argument("--language", help=f"Dataset language (default {Language.ENGLISH}).")
    parser.add_argument("--benchmark", help="Benchmark slug, e.g. elitr-bench.")
    parser.add_argument("--systems", help="Comma-separated system names.")
    parser.add_argument("--evaluators", help="Comma-separated evaluator names.")
    parser.add_argument("--study", help="A human study's id: its responses only.")
    parser.add_argument("--reference", help=reference_help)
    parser.add_argument("--gold", dest="gold_evaluator", help="Former name of --reference.")
    parser.add_argument(
        "--project",
        metavar="SLUG",
        help="The project whose data is read, and where a new study goes (default: every "
        "project's data).",
    )
