"""Agreement reports and their figures, cached under what they are computed from.

A report is a pure function of what it reads (the judgments of the selection
with their responses' metadata, the pairwise verdicts, the evaluators' kinds,
the questions whose QA and Conv wordings differ), of the selection, and of the
code; a figure is a pure function of the report. So each is stored under a
hash of exactly that and never under a time: new or changed data, another
selection, an excluded rater (whose ratings leave the table) or new code gives
a new key by itself, and no entry ever has to be invalidated. The key does not
look at what the report contains, so a new part of the report is cached with
the rest; a new part that reads anything else from the database must add it to
`report_inputs`.

What a warm request still pays: reading the table and the verdicts (the key),
one cache read for the report, one per figure and one for the part of the page
that depends on the report alone (analysis.report.render.to_html). The cache is the
`reports` alias of settings.CACHES (config.settings.base.report_cache says
which backend and why).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd
from django.conf import settings
from django.core.cache import BaseCache, caches

from analysis.report.report_types import AgreementReport
from analysis.report.scope import Scope
from analysis.report.selection import Selection

REPORTS = "reports"
# Entries never go stale; they expire to free room (the backends' own timeout).
REPORT_CACHE_SECONDS = settings.REPORT_CACHE_SECONDS
# The apps whose code a report runs (and the figures' code, in analysis).
CODE_PACKAGES = ("analysis", "judging", "annotator", "corpus", "generation")


def cache() -> BaseCache:
    """The cache reports and figures are kept in."""
    return caches[REPORTS]


@lru_cache(maxsize=1)
def code_version() -> str:
    """SHA-256 of the source of the apps a report runs (their templates too:
    the report page caches a part of itself), and of the versions of the
    packages it computes and draws with: new code, new keys."""
    from analysis.report.build import package_versions

    digest = hashlib.sha256()
    for package in CODE_PACKAGES:
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations, package
        root = Path(next(iter(spec.submodule_search_locations)))
        for path in sorted([*root.rglob("*.py"), *root.rglob("*.html")]):
            if "migrations" in path.parts:
                continue
            digest.update(f"{package}/{path.relative_to(root)}\n".encode())
            digest.update(path.read_bytes())
    import matplotlib

    versions = package_versions() | {"matplotlib": matplotlib.__version__}
    digest.update(json.dumps(versions, sort_keys=True).encode())
    return digest.hexdigest()


def table_digest(frame: pd.DataFrame) -> str:
    """SHA-256 of every cell of a table, whatever the order of its rows (the
    database returns them in no fixed order) and of its columns."""
    columns = sorted(frame.columns)
    digest = hashlib.sha256(json.dumps(columns).encode())
    if len(frame):
        rows = pd.util.hash_pandas_object(frame[columns], index=False).to_numpy()
        rows.sort()
        digest.update(rows.tobytes())
    return digest.hexdigest()


def report_inputs(scope: Scope, verdicts: pd.DataFrame) -> dict:
    """Everything the report reads besides the code, as hashes and plain values:
    the judgments it reads (raters left out already left out), the raters
    listed as left out, the verdicts, the evaluators (kinds, configurations,
    age: the reference rule reads it), the questions whose QA and Conv
    wordings differ, and how the studies behind the evaluators sampled their
    responses (PPI's design reads it)."""
    from analysis.report.build import differing_question_pks
    from annotator.models import InclusionProbability, Study
    from judging.models import Evaluator

    table = scope.table
    names = set(table["evaluator"].astype(str)) if len(table) else set()
    if len(verdicts):
        names |= set(verdicts["evaluator"].astype(str))
    names |= {r.evaluator for r in scope.raters}
    evaluators = list(
        Evaluator.objects.filter(name__in=names)
        .order_by("name")
        .values_list("pk", "name", "kind", "origin", "config")
    )
    designs = [
        [
            name,
            sampling,
            table_digest(
                pd.DataFrame(
                    list(
                        InclusionProbability.objects.filter(study_id=pk).values_list(
                            "response_id", "probability", "picked"
                        )
                    ),
                    columns=["response", "probability", "picked"],
                )
            ),
        ]
        for pk, name, sampling in Study.objects.filter(evaluator__name__in=names)
        .exclude(sampling="")
        .order_by("pk")
        .values_list("pk", "evaluator__name", "sampling")
    ]
    questions = table["question_pk"].unique() if len(table) else []
    return {
        "selection": scope.selection.as_dict(),
        "judgments": table_digest(table),
        "raters": [r.as_dict() for r in scope.raters],
        "verdicts": table_digest(verdicts),
        "evaluators": evaluators,
        "designs": designs,
        "differing_questions": sorted(differing_question_pks(questions)) if len(table) else [],
    }


@dataclass(frozen=True)
class CachedReport:
    report: AgreementReport
    json: str  # report.to_json(), computed once
    content_sha256: str  # of the JSON without created_at: what the figures are keyed on


def content_hash(report: AgreementReport) -> str:
    """SHA-256 of the report's content: its JSON less the time it was made."""
    data = report.to_dict()
    data["stamp"] = {k: v for k, v in data["stamp"].items() if k != "created_at"}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def cached_report(
    selection: Selection | Scope, *, bootstrap: int = 0, table: pd.DataFrame | None = None
) -> tuple[CachedReport, bool]:
    """The report on a selection (or a resolved one: analysis.report.scope.resolve),
    and whether it came from the cache. A cached report keeps the stamp of
    when it was computed."""
    from analysis.report.build import pairwise_verdicts, report_of
    from analysis.report.scope import resolve

    scope = selection if isinstance(selection, Scope) else resolve(selection, table)
    table = scope.table
    verdicts = (
        pairwise_verdicts(scope.selection, set(table["response_id"].unique()))
        if len(table)
        else pd.DataFrame()
    )
    inputs = report_inputs(scope, verdicts) | {"bootstrap": bootstrap, "code": code_version()}
    key = (
        "report:"
        + hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()
    )
    entry = cache().get(key)
    if isinstance(entry, CachedReport):
        return entry, True
    report = report_of(scope, bootstrap=bootstrap, verdicts=verdicts if len(table) else None)
    entry = CachedReport(report, report.to_json(), content_hash(report))
    cache().set(key, entry)
    return entry, False


def figure_key(entry: CachedReport, name: str, fmt: str) -> str:
    return f"figure:{entry.content_sha256}:{code_version()[:16]}:{name}.{fmt}"


def cached_figures(entry: CachedReport, fmt: str, names: list[str] | None = None) -> dict:
    """The report's figures (or the named ones) as `fmt` bytes, by name: read
    from the cache, the missing ones drawn and stored. An unknown name is a
    KeyError."""
    from analysis.figures import drawing, plots

    specs = plots.figures(entry.report)
    wanted = list(specs) if names is None else names
    keys = {name: figure_key(entry, name, fmt) for name in wanted}
    found = cache().get_many(list(keys.values()))
    out = {}
    for name, key in keys.items():
        data = found.get(key)
        if data is None:
            data = drawing.draw(specs[name], fmt)
            cache().set(key, data)
        out[name] = data
    return out
