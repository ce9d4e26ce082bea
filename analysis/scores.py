"""The one tidy score table every statistic reads.

One row per judgment: (response, evaluator, rater, score on 1-10) with the
response's metadata. Judgments come from LLM judges, metrics, imported files,
and human studies (whose accepted, completed ratings annotator writes as one
judgment per rater), so the analysis never cares where a score came from.
Loaded with one SQL query straight into pandas.
"""

from __future__ import annotations

import pandas as pd
from django.db import connection
from django.db.models.functions import Length

from analysis.selection import Selection, SelectionError
from judging.models import Evaluator, Judgment

COLUMNS = {
    "response_id": "response_id",
    "evaluator": "evaluator__name",
    "evaluator_kind": "evaluator__kind",
    "rater": "rater",
    "judgment_seed": "seed",
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


def judgments_for(selection: Selection):
    queryset = Judgment.objects.all()
    filters = {
        "response__run__dataset__version": selection.dataset_version,
        "response__run__dataset__split": selection.split,
        "response__run__mode": selection.mode,
        "response__run__dataset__language": selection.language,
        "response__run__dataset__benchmark__slug": selection.benchmark,
    }
    queryset = queryset.filter(**{k: v for k, v in filters.items() if v is not None})
    if selection.systems:
        queryset = queryset.filter(response__run__system__name__in=selection.systems)
    if selection.evaluators:
        known = set(
            Evaluator.objects.filter(name__in=selection.evaluators).values_list("name", flat=True)
        )
        unknown = sorted(set(selection.evaluators) - known)
        if unknown:
            raise SelectionError(f"Unknown evaluator(s): {', '.join(unknown)}.")
        queryset = queryset.filter(evaluator__name__in=selection.evaluators)
    if selection.study is not None:
        from annotator.models import Item  # the study's responses

        queryset = queryset.filter(
            response_id__in=Item.objects.filter(study_id=selection.study).values("response_id")
        )
    return queryset.annotate(response_chars=Length("response__text"))


def score_table(selection: Selection) -> pd.DataFrame:
    """The tidy table for a selection (possibly empty)."""
    queryset = judgments_for(selection).values_list(*COLUMNS.values()).order_by()
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    table = pd.DataFrame.from_records(rows, columns=list(COLUMNS))
    table["score"] = table["score"].astype(float)
    for column in (
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
    ):
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
