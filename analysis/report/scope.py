"""What a report reads and against what: the selection checked against the
stored data, the judgments it covers (raters flagged by quality control left
out unless the selection includes them), and the evaluators' roles: the
judges, the human evaluators and the reference, each either chosen in the
selection or chosen by a stated rule.

The reference rule: the human evaluator that scores the most responses of the
selection; on a tie an expert (gold) evaluator before a crowd one, then the
oldest evaluator. A study therefore never becomes the reference because it is
new: only by covering more of the selection than every other human evaluator.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from analysis.report.aggregates import aggregate_source
from analysis.report.selection import Selection, SelectionError
from judging.models import HUMAN_KINDS

if TYPE_CHECKING:  # pandas loads with the first report, not with every page that links one
    from collections.abc import Iterable

    import pandas as pd

    from analysis.report.report_types import RaterStatus
# Rank of a kind when human evaluators tie on coverage (lower first).
KIND_PRIORITY = {"gold_human": 0, "crowd_human": 1}
KIND_WORDS = {"gold_human": "expert", "crowd_human": "crowd"}
MAX_LISTED = 12


@dataclass(frozen=True)
class EvaluatorInfo:
    kind: str  # the evaluator's kind, or the original kind of imported scores
    raters_per_response: int  # > 1: each stored score is a mean of that many ratings
    pk: int = 0  # the oldest evaluator has the smallest


@dataclass(frozen=True)
class LeftOutRater:
    """A rater whose ratings the report does not read, and why."""

    evaluator: str
    rater: str
    reason: str
    # "flagged": left out by default, counted with include_flagged;
    # "failed_check": given the failed-check code, never counts;
    # "excluded": excluded by a researcher (their ratings are no judgments).
    status: RaterStatus
    ratings: int = 0  # the ratings of responses they gave (whether judgments or not)
    counted: bool = False  # True when include_flagged brought them back in

    def as_dict(self) -> dict[str, str | int | bool]:
        return {
            "evaluator": self.evaluator,
            "rater": self.rater,
            "reason": self.reason,
            "status": self.status,
            "ratings": self.ratings,
            "counted": self.counted,
        }


@dataclass
class Scope:
    """The selection resolved against the data."""

    selection: Selection
    table: pd.DataFrame  # the judgments the report reads
    raters: list[LeftOutRater] = field(default_factory=list)  # flagged, failed or excluded
    info: dict[str, EvaluatorInfo] = field(default_factory=dict)
    humans: list[str] = field(default_factory=list)
    judges: list[str] = field(default_factory=list)
    reference: str | None = None
    reference_rule: str = ""
    responses: int = 0  # responses of the selection (with any judgment)
    coverage: dict[str, int] = field(default_factory=dict)  # responses each evaluator scores
    ppi_labels: str | None = None
    panels: dict[str, dict] = field(default_factory=dict)  # analysis.report.panels' accounts
    # analysis.report.aggregates' accounts (rater models' labels as evaluators)
    aggregates: dict[str, dict] = field(default_factory=dict)

    @property
    def left_out(self) -> list[LeftOutRater]:
        return [r for r in self.raters if not r.counted]

    def coverage_text(self, name: str | None) -> str:
        if name is None:
            return "no reference: no human evaluator scores this selection"
        return f"{name}: {self.coverage.get(name, 0):,} of {self.responses:,} responses"


def evaluator_info(names: list[str], table: pd.DataFrame | None = None) -> dict[str, EvaluatorInfo]:
    """Each evaluator's effective kind (imported scores keep their original kind
    in their configuration), its raters per stored score, and its age."""
    from judging.models import Evaluator

    out: dict[str, EvaluatorInfo] = {}
    if table is not None and len(table):
        pairs = table[["evaluator", "evaluator_kind"]].drop_duplicates("evaluator")
        for name, kind in zip(
            pairs["evaluator"].astype(str), pairs["evaluator_kind"].astype(str), strict=True
        ):
            out[name] = EvaluatorInfo(kind, 1)
    for pk, name, kind, config in Evaluator.objects.filter(name__in=names).values_list(
        "pk", "name", "kind", "config"
    ):
        config = config if isinstance(config, dict) else {}
        original = config.get("original_kind") if kind == "imported" else None
        raters = config.get("raters_per_response", 1)
        out[name] = EvaluatorInfo(
            original or kind, raters if isinstance(raters, int) and raters > 1 else 1, pk
        )
    return out


def is_human(info: EvaluatorInfo | None) -> bool:
    return info is not None and info.kind in HUMAN_KINDS


# --- Checking a selection against the data --------------------------------------------------


def _given(name: str | None) -> set[str]:
    """The name as a set of one, or an empty set when it was not given."""
    return set() if name is None else {name}


def _listed(values: Iterable[object]) -> str:
    names = sorted(str(v) for v in values)
    if not names:
        return "none stored"
    shown = ", ".join(names[:MAX_LISTED])
    return shown + (f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else "")


def check(selection: Selection) -> None:
    """Every name and number of the selection refers to stored data; the roles
    do not contradict each other. Raises SelectionError saying what is valid."""
    from django.db.models import Q, QuerySet

    from annotator.models import Study
    from corpus.models import Benchmark, Dataset
    from generation.models import System
    from judging.models import Evaluator

    def in_project(queryset: QuerySet, shared: bool) -> QuerySet:
        """The selection's project's rows (and shared ones): another project's
        study, system or evaluator is refused as one that does not exist."""
        if selection.project is None:
            return queryset
        mine = Q(project__slug=selection.project)
        return queryset.filter(mine | Q(project__isnull=True) if shared else mine)

    if selection.project is not None:
        from users.models import Project

        if not Project.objects.filter(slug=selection.project).exists():
            raise SelectionError(f"project {selection.project!r}: no such project.")
    systems = in_project(System.objects.all(), shared=True)
    studies = in_project(Study.objects.all(), shared=False)
    evaluators = in_project(Evaluator.objects.all(), shared=True)
    datasets = Dataset.objects.all()
    if selection.benchmark is not None:
        slugs = set(Benchmark.objects.values_list("slug", flat=True))
        if selection.benchmark not in slugs:
            raise SelectionError(
                f"benchmark {selection.benchmark!r}: choose from {_listed(slugs)}."
            )
        datasets = datasets.filter(benchmark__slug=selection.benchmark)
    if selection.language is not None:
        languages = set(datasets.values_list("language", flat=True))
        if selection.language not in languages:
            raise SelectionError(
                f"language {selection.language!r}: choose from {_listed(languages)}."
            )
        datasets = datasets.filter(language=selection.language)
    if selection.dataset_version is not None:
        datasets = datasets.filter(version=selection.dataset_version)
    if selection.split is not None:
        splits = set(datasets.values_list("split", flat=True))
        if selection.split not in splits:
            raise SelectionError(f"split {selection.split!r}: choose from {_listed(splits)}.")
    if selection.systems:
        known = set(systems.filter(name__in=selection.systems).values_list("name", flat=True))
        unknown = sorted(set(selection.systems) - known)
        if unknown:
            raise SelectionError(
                f"systems: unknown system(s) {', '.join(map(repr, unknown))}; choose from "
                f"{_listed(systems.values_list('name', flat=True))}."
            )
    if selection.study is not None and not studies.filter(pk=selection.study).exists():
        listed = [f"{pk} ({name})" for pk, name in studies.values_list("pk", "name")]
        raise SelectionError(
            f"study {selection.study}: no such study; choose from {_listed(listed)}."
        )

    named: dict[str, set[str]] = {
        "evaluators": set(selection.evaluators),
        "judges": set(selection.judges),
        "humans": set(selection.humans),
        "reference": _given(selection.reference),
        "ppi_labels": _given(selection.ppi_labels),
    }
    everything = set().union(*named.values())
    if not everything:
        return
    derived = {name: aggregate_source(name) for name in everything}
    derived = {name: source for name, source in derived.items() if source}
    for name, source in derived.items():
        if not selection.rater_models:
            raise SelectionError(
                f"{name}: the rater models' labels of {source}, made when the report fits the "
                "rater models (rater_models=1)."
            )
        if name in named["judges"] or name in named["evaluators"]:
            raise SelectionError(
                f"{name}: the rater models' labels of {source} may be a human evaluator, the "
                f"reference or PPI's labels; select {source} itself."
            )
    stored = (everything - set(derived)) | set(derived.values())
    known = set(evaluators.filter(name__in=stored).values_list("name", flat=True))
    known |= {name for name, source in derived.items() if source in known}
    for part, names in named.items():
        unknown = sorted(names - known)
        if unknown:
            word = (
                "Unknown evaluator(s):" if part == "evaluators" else f"{part}: unknown evaluator(s)"
            )
            raise SelectionError(f"{word} {', '.join(unknown)}.")
    if selection.evaluators:
        for part in ("judges", "humans", "reference", "ppi_labels"):
            outside = sorted(
                name
                for name in named[part] - named["evaluators"]
                if derived.get(name) not in named["evaluators"]
            )
            if outside:
                raise SelectionError(
                    f"{part}: {', '.join(outside)} not among the selected evaluators; add them to "
                    "evaluators or leave evaluators empty."
                )
    both = sorted(named["judges"] & named["humans"])
    if both:
        raise SelectionError(f"{', '.join(both)}: a judge or a human evaluator, not both.")
    if selection.reference and selection.reference in named["judges"]:
        raise SelectionError(
            f"reference {selection.reference}: it is among the judges; the reference is what "
            "the judges are compared with."
        )


# --- Raters left out --------------------------------------------------------------------------


def rater_statuses(evaluators: list[str]) -> list[LeftOutRater]:
    """The raters of the studies behind these evaluators who were flagged by
    quality control, failed a check, or were excluded."""
    from django.db.models import Count, Q

    from annotator.models import Assignment, Participant

    participants = (
        Participant.objects.filter(study__evaluator__name__in=evaluators)
        .annotate(
            response_ratings=Count(
                "assignment__ratings", filter=Q(assignment__ratings__item__kind="response")
            )
        )
        .filter(
            Q(flagged=True)
            | Q(status=Participant.Status.EXCLUDED)
            | Q(assignment__attention_passed=False)
            | Q(assignment__status=Assignment.Status.NOT_QUALIFIED)
        )
        .select_related("study__evaluator", "assignment")
        .order_by("study__evaluator__name", "pk")
    )
    out = []
    for participant in participants:
        assignment: Assignment | None = getattr(participant, "assignment", None)
        study_evaluator = participant.study.evaluator
        assert study_evaluator is not None  # the query filters on its name
        evaluator = study_evaluator.name
        status: RaterStatus
        failed = assignment is not None and (
            assignment.attention_passed is False
            or assignment.status == Assignment.Status.NOT_QUALIFIED
        )
        if failed:
            what = (
                "failed an attention check"
                if assignment is not None and assignment.attention_passed is False
                else "did not pass the qualification round"
            )
            reason = f"{what} (given the failed-check code): never counts"
            status = "failed_check"
        elif participant.status == Participant.Status.EXCLUDED:
            reason = f"excluded by a researcher: {participant.exclusion_reason}"
            status = "excluded"
        else:
            reason = f"flagged by quality control: {participant.flag_reason}"
            status = "flagged"
        out.append(
            LeftOutRater(
                evaluator, participant.rater_id, reason, status, participant.response_ratings
            )
        )
    return out


def leave_out(
    table: pd.DataFrame, raters: list[LeftOutRater], include_flagged: bool
) -> tuple[pd.DataFrame, list[LeftOutRater]]:
    """The table without the ratings of the raters left out (flagged raters
    stay when include_flagged), and the raters with their rating counts."""
    if table.empty or not raters:
        return table, raters
    import numpy as np

    evaluator = table["evaluator"].astype(str).to_numpy()
    rater = table["rater"].astype(str).to_numpy()
    drop = np.zeros(len(table), dtype=bool)
    counted = []
    for entry in raters:
        rows = (evaluator == entry.evaluator) & (rater == entry.rater)
        keep = include_flagged and entry.status == "flagged"
        if not keep:
            drop |= rows
        counted.append(
            LeftOutRater(
                entry.evaluator, entry.rater, entry.reason, entry.status, entry.ratings, keep
            )
        )
    return (table[~drop].reset_index(drop=True) if drop.any() else table), counted


# --- Roles ------------------------------------------------------------------------------------


def choose_reference(
    coverage: dict[str, int], humans: list[str], info: dict[str, EvaluatorInfo]
) -> str | None:
    """The human evaluator covering most of the selection; ties: experts
    first, then the oldest evaluator."""
    scored = [h for h in humans if coverage.get(h, 0) > 0]
    if not scored:
        return None

    def rank(name: str) -> tuple[int, int, int, str]:
        entry = info.get(name, EvaluatorInfo("", 1))
        return (-coverage[name], KIND_PRIORITY.get(entry.kind, 2), entry.pk or 10**12, name)

    return min(scored, key=rank)


def resolve(selection: Selection, table: pd.DataFrame | None = None) -> Scope:
    """Check the selection, read its judgments (unless given), leave out the
    raters who do not count, and assign the roles."""
    from analysis.report.scores import score_table

    check(selection)
    if table is None:
        table = score_table(selection)
    names = sorted(str(n) for n in table["evaluator"].unique()) if len(table) else []
    # the studies the selection is about, even when none of their ratings count
    named = set(selection.humans) | set(selection.evaluators) | _given(selection.reference)
    if selection.study is not None:
        from annotator.models import Study

        named |= set(
            Study.objects.filter(pk=selection.study, evaluator__isnull=False).values_list(
                "evaluator__name", flat=True
            )
        )
    raters = rater_statuses(sorted(set(names) | named))
    table, raters = leave_out(table, raters, selection.include_flagged)
    aggregates: dict[str, dict] = {}
    if selection.rater_models:
        from analysis.report.aggregates import with_aggregates

        present = sorted(str(n) for n in table["evaluator"].unique()) if len(table) else []
        kinds = {
            name: entry.kind
            for name, entry in evaluator_info(present, table).items()
            if is_human(entry)
        }
        table, aggregates = with_aggregates(table, kinds)
    scope = Scope(selection=selection, table=table, raters=raters, aggregates=aggregates)
    if table.empty:
        scope.reference_rule = "no judgment matches the selection"
        return scope
    names = sorted(str(n) for n in table["evaluator"].unique())
    info = evaluator_info(names, table)
    for name, account in aggregates.items():
        if name in info:  # a mean over its raters: never one person's judgment (the alt-test)
            info[name] = EvaluatorInfo(info[name].kind, max(2, account["raters"]))
    scope.info = info
    scope.responses = int(table["response_id"].nunique())
    scope.coverage = {
        str(name): int(count)
        for name, count in table.groupby("evaluator", observed=True)["response_id"]
        .nunique()
        .items()
    }
    judges_named = set(selection.judges)
    if selection.humans:
        humans = [h for h in selection.humans if h in scope.coverage]
    else:
        humans = sorted(n for n in names if is_human(info.get(n)) and n not in judges_named)
    scope.humans = humans
    if selection.reference:
        scope.reference = selection.reference if selection.reference in scope.coverage else None
        scope.reference_rule = (
            "chosen for this report"
            if scope.reference
            else f"chosen for this report, but {selection.reference} scores no response of "
            "the selection"
        )
    else:
        # a rater model's labels are the reference only when chosen
        stored = [h for h in humans if h not in aggregates]
        scope.reference = choose_reference(scope.coverage, stored, info)
        scope.reference_rule = (
            "the human evaluator scoring the most responses of the selection; ties: experts "
            "first, then the oldest evaluator"
            if scope.reference
            else "no human evaluator scores the selection"
        )
    _add_panels(scope)
    names = sorted(str(n) for n in scope.table["evaluator"].unique())
    if selection.judges:
        judges = [j for j in selection.judges if j in scope.coverage]
    else:
        judges = [n for n in names if n not in humans]
    scope.judges = [j for j in judges if j != scope.reference]
    scope.ppi_labels = selection.ppi_labels or scope.reference
    return scope


def _add_panels(scope: Scope) -> None:
    """The selection's judge panels as rows of its table (after the reference is
    chosen: a learned panel learns from it)."""
    from analysis.report.panels import panels_for, with_panels

    table, scope.panels = with_panels(scope.table, scope.reference, panels_for(scope.selection))
    if table is scope.table:
        return
    scope.table = table
    added = [name for name, account in scope.panels.items() if "reason" not in account]
    scope.info.update(evaluator_info(added))
    for name in added:
        scope.coverage[name] = scope.panels[name]["responses"]


# --- The default selection --------------------------------------------------------------------


def default_selection(project: str | None = None) -> Selection:
    """The selection every "Report" link opens when none is given, stated in
    full: the setting (benchmark, version, split, mode, language) where the
    most responses have a human score, and the systems the humans rated
    there (for the paper's data: test2, single-turn, QA, English, the three
    systems of its human evaluation). Without human scores, the setting with
    the most judged responses and all its systems.

    Chosen among the responses of `project` (a slug; None: every project's),
    and naming it: another project's systems and settings are never named."""
    from django.db.models import Count

    from generation.models import Response
    from judging.models import Evaluator

    human = [
        pk
        for pk, kind, config in Evaluator.objects.values_list("pk", "kind", "config")
        if kind in HUMAN_KINDS
        or (
            kind == "imported"
            and isinstance(config, dict)
            and config.get("original_kind") in HUMAN_KINDS
        )
    ]
    keys = (
        "run__dataset__benchmark__slug",
        "run__dataset__version",
        "run__dataset__split",
        "run__mode",
        "run__dataset__language",
    )
    for evaluators in (human, None):
        responses = Response.objects.all()
        if project is not None:
            responses = responses.filter(run__project__slug=project)
        if evaluators is not None:
            if not evaluators:
                continue
            responses = responses.filter(judgments__evaluator_id__in=evaluators)
        else:
            responses = responses.filter(judgments__isnull=False)
        settings = (
            responses.values(*keys).annotate(n=Count("pk", distinct=True)).order_by("-n", *keys)
        )
        best = settings.first()
        if best is None:
            continue
        benchmark, version, split, mode, language = (best[k] for k in keys)
        systems: tuple[str, ...] = ()
        if evaluators is not None:
            systems = tuple(
                sorted(
                    set(
                        responses.filter(**{k: best[k] for k in keys}).values_list(
                            "run__system__name", flat=True
                        )
                    )
                )
            )
        return Selection(
            project=project,
            benchmark=benchmark,
            dataset_version=version,
            split=split,
            mode=mode,
            language=language,
            systems=systems,
        )
    return Selection(project=project)
