"""An adaptive study that sends what the judge defers (defer_at): its pool's
probabilities rise where the report's deferring judge defers a response and
fall to the floor where it keeps one, exactly as "Select items for humans"
weighs an indicator of the deferred responses, and every draw records its
probability, so the estimate stays an inverse-probability weighted one. A
judge that cannot defer (no confidence signal; the paper's 8 meetings, too
few for a guarantee by meeting) is refused with the report's reason, and
nothing is saved. 16 synthetic meetings, gpt-4-eval given token
probabilities (high where it is within 2 points of the gold)."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pandas as pd
import pytest
from django.utils import timezone

from adaptive.errors import AdaptiveError
from adaptive.loop import check_create
from adaptive.models import AdaptiveStudy
from analysis.planning.items_for_humans import inclusion_probabilities
from analysis.report.deferral import deferred_spreads
from analysis.report.scope import resolve
from analysis.report.scores import response_scores
from analysis.report.selection import Selection
from corpus.models import Dataset
from generation.models import System
from judging.models import Evaluator, Judgment

pytestmark = pytest.mark.django_db

SYNTHETIC = Selection(dataset_version="qa", split="test2", mode="st", project="default")


def import_sixteen_meetings(tmp_path):
    """16 synthetic meetings; gpt-4-eval's judgments carry token probabilities,
    high where it is within 2 points of the gold, spread out where not."""
    from corpus.importers.synthetic import write_synthetic_elitr
    from judging.importing import import_elitr_bench

    import_elitr_bench(
        write_synthetic_elitr(tmp_path / "data", meetings=16, seed=3), with_responses=True
    )
    table = resolve(SYNTHETIC).table
    scores = table.groupby(["response_id", "evaluator"], observed=True)["score"].mean().unstack()
    rng = np.random.default_rng(5)
    judgments = list(Judgment.objects.filter(evaluator__name="gpt-4-eval"))
    for judgment in judgments:
        gold = scores.loc[judgment.response_id, "gold-human-eval"]
        wrong = abs(scores.loc[judgment.response_id, "gpt-4-eval"] - gold) > 2
        judgment.probability = 0.25 + 0.7 * rng.random() if wrong else 0.8 + 0.2 * rng.random()
    Judgment.objects.bulk_update(judgments, ["probability"])


@pytest.fixture
def sixteen_meetings(tmp_path, db):
    import_sixteen_meetings(tmp_path)


def stated(judge: str, **fields) -> AdaptiveStudy:
    values = {
        "name": "Adaptive: what the judge defers",
        "goal": AdaptiveStudy.Goal.MEANS,
        "half_width": 1.0,
        "population": AdaptiveStudy.Population.CROWD,
        "dataset": Dataset.objects.get(version="qa", language="en", split="test2"),
        "mode": "st",
        "judge": Evaluator.objects.get(name=judge),
        "budget_pence": 60000,
        "deadline": timezone.now() + timedelta(days=2),
        "draws_per_wave": 80,
        "min_labels": 20,
        "t_opt": 200,
        "scale": 2.5,
    }
    return AdaptiveStudy(**(values | fields))


def test_the_pool_sends_what_the_judge_defers_more_often(sixteen_meetings):
    systems = list(System.objects.order_by("name"))
    adaptive = check_create(stated("gpt-4-eval", defer_at=0.2), systems)
    adaptive.refresh_from_db()
    assert adaptive.defer_at == 0.2
    # what the report's deferring judge leaves to humans at 80%
    scope = resolve(SYNTHETIC)
    rs = response_scores(scope.table)
    wide = rs.pivot(index="response_id", columns="evaluator", values="score")
    wide.columns = [str(c) for c in wide.columns]
    deferred = set(deferred_spreads(scope, rs, wide, "gpt-4-eval", 0.2).index)
    pool = {int(rid): entry for rid, entry in adaptive.pool.items()}
    assert 0 < len(deferred & set(pool)) < len(pool)  # it keeps some and defers some
    for system in systems:
        mine = sorted(rid for rid, entry in pool.items() if entry[0] == system.pk)
        indicator = pd.Series([float(rid in deferred) for rid in mine], index=mine)
        expected = inclusion_probabilities(
            indicator, count=adaptive.send_rate * len(mine), floor=adaptive.floor
        )
        got = pd.Series([pool[rid][2] for rid in mine], index=mine)
        assert np.max(np.abs(got - expected.clip(lower=1e-6))) < 1e-12
        if 0 < indicator.sum() < len(mine):
            assert got[indicator == 1].min() > got[indicator == 0].max()
    assumptions = " ".join(adaptive.plan["assumptions"])
    assert "what gpt-4-eval defers to humans at 80% agreement" in assumptions


def test_a_judge_that_cannot_defer_is_refused_and_nothing_is_saved(sixteen_meetings):
    systems = list(System.objects.order_by("name"))
    with pytest.raises(AdaptiveError) as refused:
        check_create(stated("prometheus-eval", defer_at=0.2), systems)
    assert "prometheus-eval cannot defer" in str(refused.value)
    assert "no confidence signal" in str(refused.value)
    assert not AdaptiveStudy.objects.exists()


def test_the_targets_offered_are_the_reports_and_the_database_refuses_others(sixteen_meetings):
    from django.db import IntegrityError, transaction

    from analysis.report.selection import DEFERRAL_ALPHAS

    field = AdaptiveStudy._meta.get_field("defer_at")
    assert sorted(value for value, _ in field.choices) == sorted(DEFERRAL_ALPHAS)
    adaptive = check_create(stated("gpt-4-eval", defer_at=0.1), list(System.objects.all()))
    with pytest.raises(IntegrityError), transaction.atomic():
        AdaptiveStudy.objects.filter(pk=adaptive.pk).update(defer_at=0.5)
    adaptive.refresh_from_db()
    assert adaptive.defer_at == 0.1
