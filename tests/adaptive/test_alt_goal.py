"""The alt-test goal: waves of whole meetings rated by three raters each,
the test after wave k at q * k / (1 + ... + max_looks), and the stop once it
is decided; the verdict equals the alt-test computed directly on the same
ratings at that look's q."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from adaptive import loop
from adaptive.alt_goal import q_at_look, ratings_so_far
from adaptive.models import AdaptiveStudy, Decision, Snapshot
from analysis.statistics.alt_test import alt_test
from annotator.models import Study
from demo.bots import rate_as_bots
from judging.models import Judgment
from tests.adaptive.conftest import make

pytestmark = pytest.mark.django_db


def run(adaptive, paper, rng, noise, truth=None):
    truth = truth or (lambda rid: paper["truth"][rid])
    for _ in range(40):
        for study in loop.batches(adaptive):
            if study.status == Study.Status.OPEN:
                rate_as_bots(study, truth, rng, noise=noise, dropout=0.1)
        loop.check_advance(adaptive.pk)
        adaptive.refresh_from_db()
        if adaptive.status == AdaptiveStudy.Status.FINISHED:
            return adaptive
    raise AssertionError(adaptive.status)


@pytest.mark.parametrize(
    "noise, outcome",
    [
        # raters 2 points noisy around the judge's own scores: the judge is closer
        # to the others than each of them
        (2.0, "passes at look 1"),
        # raters 1 point noisy around gold: a crowd rater rates one meeting, so more waves add
        # raters, not items per rater, and the per-rater tests never gain power
        (1.0, "inconclusive after 4 looks"),
    ],
)
def test_the_alt_test_goal_looks_after_each_wave_and_stops_when_decided(paper, noise, outcome):
    adaptive = make(
        paper,
        name="Adaptive: alt-test",
        goal=AdaptiveStudy.Goal.ALT_TEST,
        half_width=None,
        epsilon=0.2,
        max_looks=4,
        draws_per_wave=60,
    )
    assert "not simulated" in adaptive.plan["summary"]
    loop.check_start(adaptive)
    first = loop.batches(adaptive)
    assert len(first) == 1 and first[0].raters_per_task == 3
    around_the_judge = lambda rid: adaptive.pool[str(rid)][1]  # noqa: E731
    truth = around_the_judge if outcome.startswith("passes") else None
    adaptive = run(adaptive, paper, np.random.default_rng(11), noise=noise, truth=truth)
    looks = list(Decision.objects.filter(adaptive=adaptive, action="look"))
    last = Snapshot.objects.filter(adaptive=adaptive).order_by("created_at", "pk").last()
    look = last.estimates[0]
    if outcome == "passes at look 1":
        assert len(looks) == 1 and look["verdict"] == "passes" and adaptive.report["met"]
        assert adaptive.stop_reason == "the goal is met: the judge passes"
        assert adaptive.report["answer"].startswith("Answered: passes at ε 0.2")
    else:
        assert len(looks) == 4 and look["verdict"] == "inconclusive"
        assert not adaptive.report["met"]
        assert adaptive.stop_reason.startswith("inconclusive after 4 looks: ")
    # the same test computed directly on the same ratings, at the last look's q
    humans = pd.DataFrame(
        Judgment.objects.filter(evaluator__study__in=loop.batches(adaptive)).values_list(
            "response_id", "rater", "score"
        ),
        columns=["item", "rater", "score"],
    )
    judge = pd.Series({int(r): e[1] for r, e in adaptive.pool.items()}).loc[
        sorted(set(humans["item"]))
    ]
    q = 0.05 * len(looks) / (1 + 2 + 3 + 4)
    assert f"look {len(looks)} of 4 (q {q:.4f})" in looks[-1].detail
    direct = alt_test(humans, judge, epsilon=0.2, q=q)
    assert look["winning_rate"] == pytest.approx(direct["winning_rate"], abs=1e-12)
    assert (look["verdict"] == "passes") == direct["passed"]
    mine, _ = ratings_so_far(adaptive)
    assert len(mine) == len(humans)
    # every crowd rater rated a whole meeting: the test's 30 items per rater
    assert humans.groupby("rater").size().min() >= 30
    # meetings are never rated in two waves
    waves = Study.objects.filter(pk__in=[s.pk for s in loop.batches(adaptive)])
    documents = [set(s.documents.values_list("pk", flat=True)) for s in waves]
    assert sum(len(d) for d in documents) == len(set().union(*documents))


def test_the_alt_test_goal_needs_its_margin_and_three_raters(paper):
    from adaptive.errors import AdaptiveError

    with pytest.raises(AdaptiveError, match="epsilon between 0 and 1"):
        make(paper, name="No margin", goal="alt_test", half_width=None, epsilon=None)
    with pytest.raises(AdaptiveError, match="3 or more raters per item"):
        make(
            paper,
            name="Two raters",
            goal="alt_test",
            half_width=None,
            epsilon=0.2,
            raters_per_item=2,
        )
    assert not AdaptiveStudy.objects.exists()


@pytest.mark.parametrize("looks", [1, 4, 6])
def test_the_looks_split_q_in_proportion_to_their_number(looks):
    """Look k spends q * k / (1 + ... + looks): the shares add up to q (the
    Bonferroni argument), and the first look, on one wave, spends the least."""
    shares = [q_at_look(k, looks) for k in range(1, looks + 1)]
    assert sum(shares) == pytest.approx(0.05, abs=1e-15)
    assert shares == sorted(shares) and shares[0] == pytest.approx(0.05 / sum(range(looks + 1)))
    # a look past the last spends no more than the last
    assert q_at_look(looks + 3, looks) == shares[-1]
