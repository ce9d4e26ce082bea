"""The score table: streamed with COPY on PostgreSQL, it holds exactly what
the row-by-row query holds and gives the same report; the data hash is the
one of the sorted table; individual ratings match a pandas groupby."""

import hashlib
import json

import numpy as np
import pandas as pd
import pytest
from django.db import connection

from analysis.report import scores
from analysis.report.build import build_report, data_hash
from analysis.report.selection import Selection
from analysis.statistics.ratings import individual_ratings
from judging.models import Evaluator, Judgment
from tests.conftest import require

pytestmark = pytest.mark.django_db


@pytest.fixture
def rated(two_meetings):
    """Individual raters (one who judged a response twice, with two seeds) beside
    the synthetic data's imported scores."""
    panel = Evaluator.objects.create(name='panel, "quoted"', kind="imported")
    gold = Judgment.objects.filter(evaluator__name="gold-human-eval").order_by("response_id")
    rows = []
    for index, judgment in enumerate(gold):
        for rater in ("a", "b,c", ""):
            score = min(10.0, max(1.0, judgment.score + (index % 3) - 1))
            rows.append(
                Judgment(
                    evaluator=panel,
                    response_id=judgment.response_id,
                    rater=rater,
                    seed=7 if index % 5 == 0 else None,
                    score=score,
                    raw_score=score,
                    raw_scale_min=1,
                    raw_scale_max=10,
                )  # fmt: skip
            )
        if index == 0:
            rows.append(
                Judgment(
                    evaluator=panel,
                    response_id=judgment.response_id,
                    rater="a",
                    seed=8,
                    score=2.0,
                    raw_score=2.0,
                    raw_scale_min=1,
                    raw_scale_max=10,
                )  # fmt: skip
            )
    Judgment.objects.bulk_create(rows)


def comparable(table: pd.DataFrame) -> pd.DataFrame:
    out = table.copy()
    for column in out.columns:
        if isinstance(out[column].dtype, pd.CategoricalDtype) or out[column].dtype == object:
            out[column] = out[column].astype(str)
    keys = ["response_id", "evaluator", "rater", "judgment_seed", "order"]
    return out.sort_values(keys, na_position="first").reset_index(drop=True)


@pytest.mark.parametrize(
    "selection",
    [
        Selection(),
        Selection(split="test2", mode="st"),
        Selection(systems=("Synthetic-Echo",)),
        Selection(split="test2", mode="mt"),  # valid, but nothing matches
    ],  # fmt: skip
)
def test_copy_loader_holds_what_the_query_holds(rated, selection):
    require(connection.vendor == "postgresql", "COPY needs PostgreSQL (DATABASE_URL)")
    copied = scores.copied_score_table(selection)
    fetched = scores.fetched_score_table(selection)
    assert list(copied.columns) == list(fetched.columns)
    pd.testing.assert_frame_equal(comparable(copied), comparable(fetched), check_dtype=False)
    assert data_hash(copied) == data_hash(fetched)
    mine = build_report(selection, table=copied).to_dict()
    theirs = build_report(selection, table=fetched).to_dict()
    for report in (mine, theirs):
        report["stamp"].pop("created_at")
    # the same numbers (rows in another order: sums may differ in the last bit)
    assert same(json.loads(json.dumps(mine)), json.loads(json.dumps(theirs)))


def same(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-9, abs=1e-12)
    return a == b


def test_data_hash_is_the_hash_of_the_sorted_table(rated):
    table = scores.score_table(Selection())
    keyed = table[["response_id", "evaluator", "rater", "judgment_seed", "order", "score"]].copy()
    keyed["evaluator"] = keyed["evaluator"].astype(str)
    keyed["rater"] = keyed["rater"].astype(str)
    keyed = keyed.sort_values(
        ["response_id", "evaluator", "rater", "judgment_seed", "order"], na_position="first"
    )
    expected = hashlib.sha256(
        pd.util.hash_pandas_object(keyed, index=False).to_numpy().tobytes()
    ).hexdigest()
    assert data_hash(table) == expected
    shuffled = table.sample(frac=1.0, random_state=1)
    assert data_hash(shuffled) == expected


def test_individual_ratings_match_a_groupby(rated):
    table = scores.score_table(Selection())
    ratings = individual_ratings(table)
    assert set(ratings) == {'panel, "quoted"'}
    rows = ratings['panel, "quoted"']
    expected = (
        table[(table["rater"] != "") & (table["evaluator"] == 'panel, "quoted"')]
        .groupby(["meeting", "response_id", "rater"], observed=True)["score"]
        .mean()
        .reset_index()
    )
    expected["rater"] = expected["rater"].astype(str)
    got = rows.assign(rater=rows["rater"].astype(str), meeting=rows["meeting"].astype(str))
    expected["meeting"] = expected["meeting"].astype(str)
    pd.testing.assert_frame_equal(
        got.sort_values(["response_id", "rater"]).reset_index(drop=True),
        expected.sort_values(["response_id", "rater"]).reset_index(drop=True),
        check_dtype=False,
    )
    # the rater who judged a response twice counts once, with the mean
    first = rows[(rows["rater"] == "a")].iloc[0]
    assert len(rows[(rows["response_id"] == first["response_id"]) & (rows["rater"] == "a")]) == 1
    assert np.isfinite(rows["score"]).all()
