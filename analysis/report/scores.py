"""The one tidy score table every statistic reads.

One row per judgment: (response, evaluator, rater, score on 1-10) with the
response's metadata. Judgments come from LLM judges, metrics, imported files,
and human studies (whose accepted, completed ratings annotator writes as one
judgment per rater), so the analysis never cares where a score came from.
Loaded from PostgreSQL with COPY ... TO STDOUT (judgments, then their
responses' metadata once per response) into pandas' C CSV reader, without a
Python object per row; elsewhere with one SQL query.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import QuerySet
from django.db.models.functions import Length

from analysis.report.selection import Selection
from generation.models import GenerationRun, Response
from judging.models import HUMAN_KINDS, Evaluator, Judgment

COLUMNS = {
    "response_id": "response_id",
    "evaluator": "evaluator__name",
    "evaluator_kind": "evaluator__kind",
    "rater": "rater",
    "judgment_seed": "seed",
    "judgment_probability": "probability",
    "order": "order",
    "score": "score",
    "system": "response__run__system__name",
    "mode": "response__run__mode",
    "run_seed": "response__run__seed",
    "run_id": "response__run_id",
    "dataset_version": "response__run__dataset__version",
    "language": "response__run__dataset__language",
    "split": "response__run__dataset__split",
    "benchmark": "response__run__dataset__benchmark__slug",
    "meeting": "response__question__document__external_id",
    "question_pk": "response__question_id",
    "question_id": "response__question__external_id",
    "question_type": "response__question__question_type",
    "answer_position": "response__question__answer_position",
    "response_chars": "response_chars",
}


def runs_for(selection: Selection, probes_only: bool = False) -> list[int]:
    """The generation runs the selection covers: every filter but the study and
    the evaluators is a property of a run, so the judgments' query joins one
    table (responses) instead of four. `probes_only`: the probe systems' runs
    of the same setting instead (generation.probes)."""
    filters = {
        "project__slug": selection.project,
        "dataset__version": selection.dataset_version,
        "dataset__split": selection.split,
        "mode": selection.mode,
        "dataset__language": selection.language,
        "dataset__benchmark__slug": selection.benchmark,
    }
    runs = GenerationRun.objects.filter(**{k: v for k, v in filters.items() if v is not None})
    # answers known to be bad (generation.probes) are read by the probes part alone,
    # whatever systems the selection names
    probes = runs.filter(system__config__has_key="probe")
    if probes_only:
        return list(probes.values_list("pk", flat=True))
    if selection.systems:
        runs = runs.filter(system__name__in=selection.systems)
    return list(runs.exclude(pk__in=probes).values_list("pk", flat=True))


def loaded_evaluators(selection: Selection) -> list[str] | None:
    """The evaluators whose judgments are read (None: every one). Naming judges
    reads those judges and the human evaluators (all of them, or the named
    ones), not the other judges."""
    from judging.models import Evaluator

    names = set(selection.evaluators)
    if not selection.judges:
        return sorted(names | _members_of(names)) if names else None
    humans = set(selection.humans)
    if not humans:
        every = Evaluator.objects.values_list("name", "kind", "config")
        humans = {
            name
            for name, kind, config in every
            if kind in HUMAN_KINDS
            or (
                kind == "imported"
                and isinstance(config, dict)
                and config.get("original_kind") in HUMAN_KINDS
            )
        }
    wanted = set(selection.judges) | humans
    wanted |= {name for name in (selection.reference, selection.ppi_labels) if name is not None}
    if names:
        wanted &= names
    return sorted(wanted | _members_of(wanted))


def _members_of(names: set[str]) -> set[str]:
    """The members of the judge panels among `names` (a panel's scores are made
    from theirs, analysis.report.panels)."""
    from analysis.report.panels import PANEL_KIND, panel_members

    found = Evaluator.objects.filter(kind=PANEL_KIND, name__in=names).values_list(
        "config", flat=True
    )
    return {member for config in found for member in panel_members(config)[0]}


def judgments_for(selection: Selection) -> QuerySet[Judgment]:
    """The judgments of the selection's responses by the evaluators it reads
    (analysis.report.scope.check has checked the names)."""
    queryset = Judgment.objects.filter(response__run_id__in=runs_for(selection))
    evaluators = loaded_evaluators(selection)
    if evaluators is not None:
        queryset = queryset.filter(evaluator__name__in=evaluators)
    if selection.study is not None:
        from annotator.models import Item  # the study's responses

        queryset = queryset.filter(
            response_id__in=Item.objects.filter(study_id=selection.study).values("response_id")
        )
    return queryset.annotate(response_chars=Length("response__text"))


CATEGORIES = (
    "evaluator",
    "system",
    "mode",
    "dataset_version",
    "split",
    "meeting",
    "question_type",
    "answer_position",
    "evaluator_kind",
    "language",
)
# Per judgment: what the judgment itself holds. Everything else describes the
# response and is read once per response (a response has 4 to 12 judgments).
JUDGMENT_COLUMNS = {
    "response_id": "response_id",
    "evaluator_id": "evaluator_id",
    "rater": "rater",
    "judgment_seed": "seed",
    "judgment_probability": "probability",
    "order": "order",
    "score": "score",
}
RESPONSE_COLUMNS = {
    "response_id": "pk",
    "system": "run__system__name",
    "mode": "run__mode",
    "run_seed": "run__seed",
    "run_id": "run_id",
    "dataset_version": "run__dataset__version",
    "language": "run__dataset__language",
    "split": "run__dataset__split",
    "benchmark": "run__dataset__benchmark__slug",
    "meeting": "question__document__external_id",
    "question_pk": "question_id",
    "question_id": "question__external_id",
    "question_type": "question__question_type",
    "answer_position": "question__answer_position",
    "response_chars": "response_chars",
}


def score_table(selection: Selection) -> pd.DataFrame:
    """The tidy table for a selection (possibly empty). On PostgreSQL it is
    streamed with COPY (judgments and responses apart); elsewhere one query."""
    if connection.vendor == "postgresql":
        return copied_score_table(selection)
    return fetched_score_table(selection)


def _copy_csv(queryset, dtypes: dict, columns: list[str]) -> pd.DataFrame:
    """COPY (the queryset's SELECT) TO STDOUT as CSV, parsed by pandas' C reader.
    NULL is an unquoted empty field, an empty string a quoted one: only the
    nullable numeric columns read empty fields as NaN."""
    import io

    from psycopg import ClientCursor

    sql, params = queryset.query.sql_with_params()
    connection.ensure_connection()
    raw = connection.connection
    literal = ClientCursor(raw).mogrify(sql, params)
    buffer = io.BytesIO()
    with raw.cursor() as cursor, cursor.copy(f"COPY ({literal}) TO STDOUT (FORMAT csv)") as copy:
        for block in copy:
            buffer.write(block)
    buffer.seek(0)
    nullable = [c for c, t in dtypes.items() if t == "float64"]
    return pd.read_csv(
        buffer,
        names=columns,
        header=None,
        dtype=dtypes,
        keep_default_na=False,
        na_values={c: [""] for c in nullable},
    )


def copied_score_table(selection: Selection) -> pd.DataFrame:
    judgments = judgments_for(selection)
    if not judgments.exists():  # nothing to stream (and the same empty table as the ORM's)
        return fetched_score_table(selection)
    table = _copy_csv(
        judgments.values_list(*JUDGMENT_COLUMNS.values()).order_by(),
        {
            "response_id": "int64",
            "evaluator_id": "int64",
            "rater": "category",
            "judgment_seed": "float64",
            "judgment_probability": "float64",
            "order": "int64",
            "score": "float64",
        },
        list(JUDGMENT_COLUMNS),
    )
    responses = _copy_csv(
        Response.objects.filter(pk__in=judgments.values("response_id"))
        .annotate(response_chars=Length("text"))
        .values_list(*RESPONSE_COLUMNS.values())
        .order_by(),
        {
            "response_id": "int64",
            "run_seed": "float64",
            "run_id": "int64",
            "question_pk": "int64",
            "question_id": "category",
            "response_chars": "int64",
            "benchmark": "category",
        }
        | {c: "category" for c in CATEGORIES if c not in ("evaluator", "evaluator_kind")},
        list(RESPONSE_COLUMNS),
    )
    evaluators = pd.DataFrame(
        list(Evaluator.objects.values_list("pk", "name", "kind")), columns=["id", "name", "kind"]
    ).set_index("id")
    evaluators = evaluators.reindex(np.unique(table["evaluator_id"].to_numpy()))
    names = pd.Categorical(evaluators["name"])
    kinds = pd.Categorical(evaluators["kind"])
    at = evaluators.index.get_indexer(table["evaluator_id"].to_numpy())
    rows = pd.Index(responses["response_id"]).get_indexer(table["response_id"].to_numpy())
    columns = {
        "response_id": table["response_id"].to_numpy(),
        "evaluator": pd.Categorical.from_codes(names.codes[at], names.categories),
        "evaluator_kind": pd.Categorical.from_codes(kinds.codes[at], kinds.categories),
        "rater": table["rater"].array,
        "judgment_seed": table["judgment_seed"].to_numpy(),
        "judgment_probability": table["judgment_probability"].to_numpy(),
        "order": table["order"].to_numpy(),
        "score": table["score"].to_numpy(),
    }
    for name in list(RESPONSE_COLUMNS)[1:]:
        column = responses[name]
        if isinstance(column.dtype, pd.CategoricalDtype):
            columns[name] = pd.Categorical.from_codes(
                column.cat.codes.to_numpy()[rows], column.cat.categories
            )
        else:
            columns[name] = column.to_numpy()[rows]
    out = pd.DataFrame(columns)
    out["rater"] = out["rater"].astype("category")
    return out[list(COLUMNS)]


def fetched_score_table(selection: Selection) -> pd.DataFrame:
    """The tidy table from one query fetched row by row (SQLite, and the
    reference the COPY loader is tested against)."""
    queryset = judgments_for(selection).values_list(*COLUMNS.values()).order_by()
    try:
        sql, params = queryset.query.sql_with_params()
    except EmptyResultSet:  # no run matches: nothing to ask the database
        rows = []
    else:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
    table = pd.DataFrame.from_records(rows, columns=list(COLUMNS))
    table["score"] = table["score"].astype(float)
    # NaN where none, as the COPY loader reads them
    for column in ("judgment_seed", "judgment_probability", "run_seed"):
        table[column] = pd.to_numeric(table[column]).astype(float)
    for column in CATEGORIES:
        table[column] = table[column].astype("category")
    return table


def response_scores(table: pd.DataFrame) -> pd.DataFrame:
    """One score per (response, evaluator): the mean over raters, seeds and
    orders (a crowd evaluator's score is the mean of its accepted raters)."""
    keys = ["response_id", "evaluator"]
    meta = [
        "system",
        "mode",
        "run_seed",
        "run_id",
        "dataset_version",
        "split",
        "meeting",
        "question_pk",
        "question_id",
        "question_type",
        "answer_position",
        "response_chars",
    ]
    grouped = table.groupby(keys, observed=True, sort=False)
    scores = grouped["score"].mean().rename("score")
    raters = grouped["score"].size().rename("ratings")
    first = grouped[meta].first()
    return pd.concat([scores, raters, first], axis=1).reset_index()
