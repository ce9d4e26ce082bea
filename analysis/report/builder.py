"""The report builder: the form at the top of the report page that states
every choice of the selection (analysis.report.selection) and offers the stored
values for each, so that changing the reference, the raters or the PPI
labelled set is one submit away and visible in the URL."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.report.selection import (
    ALIGNMENTS,
    DEFAULT_LABELLED,
    MODES,
    TRUE_WORDS,
    VERSIONS,
    split_names,
)

ALIGNMENT_WORDS = {
    "neg_rmse": "negative RMSE (scores; the authors' default)",
    "neg_mae": "negative mean absolute distance (scores)",
    "accuracy": "accuracy (labels)",
    "rank": "ranks (only the order matters)",
}
MODE_WORDS = {"st": "single-turn", "mt": "multi-turn"}


@dataclass(frozen=True)
class Option:
    value: str
    label: str


def _text(params, name: str) -> str:
    value = params.get(name)
    return "" if value is None else str(value).strip()


def _names(params, name: str) -> set[str]:
    values = params.getlist(name) if hasattr(params, "getlist") else [_text(params, name)]
    return {v.strip() for value in values for v in split_names(str(value)) if v.strip()}


def builder_context(params, scope=None, *, user) -> dict:
    """What the builder shows: the choices stored in the database that `user`
    may read (his projects' systems, evaluators and studies and the shared
    ones; only the named project's when the query names one) and the values
    asked for (`params`, the query's strings, valid or not), with the
    defaults a resolved `scope` chose."""
    from django.db.models import Q

    from annotator.models import Study
    from corpus.models import Benchmark, Dataset
    from generation.models import System
    from judging.models import HUMAN_KINDS, Evaluator
    from users.projects import is_site_admin, visible_projects
    from users.projects import scope as readable

    project = (
        _text(params, "project")
        or (getattr(scope, "selection", None) and scope.selection.project)
        or ""
    )
    projects = [
        Option(slug, name)
        for slug, name in visible_projects(user).order_by("name").values_list("slug", "name")
    ]
    if is_site_admin(user):
        projects.insert(0, Option("", "every project"))
    elif not project and len(projects) > 1:
        from analysis.report.query import data_project

        project = data_project(user)  # where the report opens when none is named

    def offered(queryset, shared: bool):
        rows = readable(queryset, user, shared=shared)
        if project:
            rows = rows.filter(
                Q(project__slug=project) | Q(project__isnull=True)
                if shared
                else Q(project__slug=project)
            )
        return rows

    evaluators = []
    for name, kind, config in offered(Evaluator.objects.order_by("name"), True).values_list(
        "name", "kind", "config"
    ):
        original = config.get("original_kind") if isinstance(config, dict) else None
        effective = original if kind == "imported" and original else kind
        evaluators.append((name, effective))
    humans = [n for n, k in evaluators if k in HUMAN_KINDS]
    judges = [n for n, k in evaluators if k not in HUMAN_KINDS]
    chosen_reference = _text(params, "reference") or _text(params, "gold_evaluator")
    languages = sorted(set(Dataset.objects.values_list("language", flat=True)))
    default_reference = getattr(scope, "reference", None)
    kept = responses_kept(params, offered(System.objects.all(), True))
    chosen_benchmark = _text(params, "benchmark")
    splits = Dataset.objects.all()
    if chosen_benchmark:
        splits = splits.filter(benchmark__slug=chosen_benchmark)
    return {
        "benchmarks": [Option("", "any")]
        + [Option(s, s) for s in Benchmark.objects.order_by("slug").values_list("slug", flat=True)],
        "versions": [Option("", "any")] + [Option(v, v) for v in VERSIONS],
        # the chosen benchmark's splits only
        "splits": [Option("", "any")]
        + [Option(s, s) for s in sorted(set(splits.values_list("split", flat=True)))],
        "modes": [Option("", "any")] + [Option(m, MODE_WORDS.get(m, m)) for m in MODES],
        "languages": [Option(lang, lang) for lang in languages] or [Option("en", "en")],
        # the systems with responses in the setting asked for, each with how many
        "systems": sorted(kept),
        "system_responses": kept,
        # a human evaluator may be judged (can the crowd replace the experts?);
        # only human evaluators are offered as the humans and the reference
        "judge_names": judges + humans,
        "human_names": humans,
        # the rater models' labels this report made (analysis.report.aggregates): they
        # may be its reference or PPI's labels once Rater models is ticked
        "aggregate_names": sorted(
            name
            for name, account in (getattr(scope, "aggregates", None) or {}).items()
            if "reason" not in account
        ),
        # the field shows when there is a choice to make
        "projects": projects if len(projects) > 1 else [],
        "evaluator_kinds": dict(evaluators),
        "studies": [
            Option(str(pk), f"{pk}: {name}")
            for pk, name in offered(Study.objects.order_by("-created_at"), False).values_list(
                "pk", "name"
            )
        ],
        "alignments": [Option(a, ALIGNMENT_WORDS[a]) for a in ALIGNMENTS],
        "values": {
            "project": project,
            "benchmark": _text(params, "benchmark"),
            "dataset_version": _text(params, "dataset_version"),
            "split": _text(params, "split"),
            "mode": _text(params, "mode"),
            "language": _text(params, "language") or "en",
            "systems": _names(params, "systems"),
            "judges": _names(params, "judges"),
            "humans": _names(params, "humans"),
            "evaluators": _text(params, "evaluators"),
            "study": _text(params, "study"),
            "reference": chosen_reference,
            "epsilon": _text(params, "epsilon"),
            "alignment": _text(params, "alignment") or "neg_rmse",
            "ppi_labels": _text(params, "ppi_labels"),
            "ppi_labelled": _text(params, "ppi_labelled") or str(DEFAULT_LABELLED),
            "target_width": _text(params, "target_width") or "1",
            "include_flagged": _text(params, "include_flagged").lower() in TRUE_WORDS,
            "rater_models": _text(params, "rater_models").lower() in TRUE_WORDS,
            "length_control": _text(params, "length_control").lower() in TRUE_WORDS,
            "style_control": _text(params, "style_control").lower() in TRUE_WORDS,
        },
        "default_reference": default_reference,
        "default_judges": list(getattr(scope, "judges", []) or []),
        "default_humans": list(getattr(scope, "humans", []) or []),
    }


def responses_kept(params, systems) -> dict[str, int]:
    """{system: its responses in the setting the query asks for (benchmark,
    version, split, mode, language)}: the builder offers the systems that
    have some there, and says how many each keeps."""
    from django.db.models import Count

    from generation.models import Response

    wanted = {
        "run__dataset__benchmark__slug": _text(params, "benchmark"),
        "run__dataset__version": _text(params, "dataset_version"),
        "run__dataset__split": _text(params, "split"),
        "run__mode": _text(params, "mode"),
        "run__dataset__language": _text(params, "language") or "en",
    }
    rows = (
        Response.objects.filter(run__system__in=systems, **{k: v for k, v in wanted.items() if v})
        .values_list("run__system__name")
        .annotate(n=Count("pk"))
    )
    return dict(rows)
