"""The design a study runs (analysis.planning.study_plan): the plan chooses the
cheapest design that keeps its coverage, a researcher may choose another (a
recorded decision), and the loop runs it. The fixed designs send every draw
of the plan's first wave to a human, read their fixed-n interval once the
wave is rated, add at most TOP_UPS top-ups sized on the spread of the labels,
and their final interval is `fixed_estimate` on the same ratings."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from adaptive import loop
from adaptive.estimates import SystemEstimate, estimates, goal_met
from adaptive.models import AdaptiveStudy, Decision, Draw
from analysis.planning.study_plan import TOP_UP_LEAST, VARIANCE_BOUND, fixed_estimate, fixed_size
from annotator.models import Study
from demo.bots import rate_as_bots
from judging.models import Judgment
from tests.adaptive.conftest import make

pytestmark = pytest.mark.django_db

SCALE = (1, 10)


def rate_open_batches(adaptive, paper, rng):
    for study in loop.batches(adaptive):
        if study.status == Study.Status.OPEN:
            rate_as_bots(study, lambda rid: paper["truth"][rid], rng, dropout=0)


def run_to_the_end(adaptive, paper, rng, most_steps=20):
    for _ in range(most_steps):
        rate_open_batches(adaptive, paper, rng)
        loop.check_advance(adaptive.pk)
        adaptive.refresh_from_db()
        if adaptive.status == AdaptiveStudy.Status.FINISHED:
            return adaptive
    raise AssertionError(f"still {adaptive.status} after {most_steps} steps")


def ratings(adaptive, system):
    """A system's labels in the order drawn, the judge's score of each
    labelled draw, the judge's mean over the system's pool, and the draws of
    its first wave: read from the batches' judgments, not from the loop."""
    batches = loop.batches(adaptive)
    label = {
        (j.evaluator.study.pk, j.response_id): j.score
        for j in Judgment.objects.filter(evaluator__study__in=batches).select_related(
            "evaluator__study"
        )
    }
    draws = list(Draw.objects.filter(adaptive=adaptive, system=system).order_by("position"))
    human = np.array([label[(d.study_id, d.response_id)] for d in draws], float)
    judge = np.array([adaptive.pool[str(d.response_id)][1] for d in draws], float)
    pool = [entry[1] for entry in adaptive.pool.values() if entry[0] == system.pk]
    first = sum(1 for d in draws if d.wave == 1)
    return human, judge, float(np.mean(pool)), first


def test_a_ppi_study_runs_its_first_wave_a_top_up_and_reads_the_fixed_interval(paper, researcher):
    adaptive = make(paper, researcher, name="Fixed: PPI with a top-up")
    # the paper's data with GPT-4, an informative judge: the plan chooses PPI
    assert adaptive.design == adaptive.plan["design"] == "ppi"
    reason = adaptive.plan["design_reason"]
    assert reason.startswith("the fewest paid places") and "PPI" in reason
    assert set(adaptive.plan["designs"]) == {"uniform", "ppi", "adaptive"}
    assert not Decision.objects.filter(adaptive=adaptive, action="design").exists()
    # a first wave too small for the width (the plan's would reach it): a top-up follows
    adaptive.plan["designs"]["ppi"]["first_wave"] = [10, 10, 10]
    adaptive.save(update_fields=["plan"])
    loop.check_start(adaptive, researcher)
    draws = Draw.objects.filter(adaptive=adaptive)
    assert draws.count() == 30
    assert set(draws.values_list("probability", "sent")) == {(1.0, True)}  # every draw sent
    first = Decision.objects.get(adaptive=adaptive, action="wave")
    assert first.detail.startswith("wave 1 (ppi: a fixed design with the judge (PPI)): 30 draws")
    assert "the plan's first wave" in first.detail

    rng = np.random.default_rng(11)
    rate_open_batches(adaptive, paper, rng)
    # the top-up, computed directly on the first wave's ratings: the labels the
    # interval needs in all at the 90% bound of their spread (read with the first
    # wave's degrees of freedom, as the final interval is), less those it has
    expected = {}
    for system in paper["systems"]:
        human, judge, pool_mean, _ = ratings(adaptive, system)
        _, low, high, _ = fixed_estimate("ppi", human, judge, pool_mean, 0.05, SCALE)
        if (high - low) / 2 > 1.0:
            total = fixed_size(
                "ppi", human, judge, 1.0, 0.05, SCALE, variance_bound=VARIANCE_BOUND, first=10
            )
            expected[system.pk] = max(total - 10, TOP_UP_LEAST)
    assert expected  # ten labels do not reach +-1.0
    assert loop.check_advance(adaptive.pk) == "wave"
    second = Counter(
        Draw.objects.filter(adaptive=adaptive, wave=2).values_list("system_id", flat=True)
    )
    assert dict(second) == expected
    assert set(Draw.objects.values_list("probability", "sent")) == {(1.0, True)}
    top_up = Decision.objects.filter(adaptive=adaptive, action="wave").last()
    assert top_up.detail.startswith("wave 2 (ppi: a fixed design with the judge (PPI))")
    assert "top-up 1 of at most 2" in top_up.detail and "never on their mean" in top_up.detail

    adaptive = run_to_the_end(adaptive, paper, rng)
    report = adaptive.report
    assert report["met"] is True and adaptive.stop_reason == "the goal is met"
    assert report["design"] == "ppi" and report["interval"] == "fixed"
    assert report["design_reason"] == reason
    assert "(95% fixed-n, read once at the end, each)" in report["answer"]
    assert "not anytime-valid" in report["design_note"]
    # the final interval is fixed_estimate on the same ratings, with the first
    # wave's degrees of freedom (Stein's two-stage design)
    found = {e["system_id"]: e for e in report["estimates"]}
    for system in paper["systems"]:
        human, judge, pool_mean, first_count = ratings(adaptive, system)
        assert first_count == 10
        mean, low, high, _ = fixed_estimate(
            "ppi", human, judge, pool_mean, 0.05, SCALE, first=first_count
        )
        assert found[system.pk]["labels"] == len(human) == found[system.pk]["draws"]
        assert found[system.pk]["mean"] == pytest.approx(mean, abs=1e-12)
        assert found[system.pk]["lower"] == pytest.approx(low, abs=1e-12)
        assert found[system.pk]["upper"] == pytest.approx(high, abs=1e-12)
        assert (high - low) / 2 <= 1.0


def test_a_uniform_study_chosen_by_its_researcher_runs_to_the_end(paper, researcher):
    adaptive = make(paper, researcher, name="Fixed: uniform by hand", design="uniform")
    assert adaptive.design == adaptive.plan["design"] == "uniform"
    assert adaptive.plan["planned_design"] == "ppi"
    assert adaptive.plan["design_reason"].startswith("chosen by the researcher")
    chosen = Decision.objects.get(adaptive=adaptive, action="design")
    assert chosen.actor == researcher
    assert chosen.detail.startswith("rita chose a fixed uniform design on humans alone")
    assert "over the plan's a fixed design with the judge (PPI)" in chosen.detail
    loop.check_start(adaptive, researcher)
    # the first wave is the plan's, per system
    planned = dict(zip(adaptive.plan["systems"], adaptive.plan["first_wave"], strict=True))
    sent = Counter(Draw.objects.filter(adaptive=adaptive).values_list("system__name", flat=True))
    assert dict(sent) == planned

    adaptive = run_to_the_end(adaptive, paper, np.random.default_rng(12))
    assert set(Draw.objects.values_list("probability", "sent")) == {(1.0, True)}
    report = adaptive.report
    assert report["met"] is True and report["design"] == "uniform"
    found = {e["system_id"]: e for e in report["estimates"]}
    for system in paper["systems"]:
        human, judge, pool_mean, first_count = ratings(adaptive, system)
        assert first_count == planned[system.name]
        mean, low, high, lam = fixed_estimate(
            "uniform", human, judge, pool_mean, 0.05, SCALE, first=first_count
        )
        assert lam == 0 and mean == pytest.approx(np.clip(human.mean(), *SCALE))  # humans alone
        assert found[system.pk]["mean"] == pytest.approx(mean, abs=1e-12)
        assert found[system.pk]["lower"] == pytest.approx(low, abs=1e-12)
        assert found[system.pk]["upper"] == pytest.approx(high, abs=1e-12)


def test_a_fixed_design_does_not_stop_early_on_the_mean():
    """Narrow enough, but ratings still wait: a fixed design reads its interval
    once the wave is rated; the adaptive design may stop at once."""
    narrow = [SystemEstimate(1, "a", 5.0, 4.8, 5.2, 40, 40, pending=3)]
    for design, met in [("ppi", False), ("uniform", False), ("adaptive", True)]:
        adaptive = AdaptiveStudy(goal="means", half_width=1.0, min_labels=20, design=design)
        assert goal_met(adaptive, narrow) is met
    done = [SystemEstimate(1, "a", 5.0, 4.8, 5.2, 43, 43, pending=0)]
    assert goal_met(AdaptiveStudy(goal="means", half_width=1.0, design="ppi"), done)


def test_after_its_top_ups_a_fixed_design_stops_and_says_the_width_was_not_reached(
    paper, monkeypatch
):
    monkeypatch.setattr(loop, "TOP_UPS", 0)  # no top-up allowed: the first wave is all
    adaptive = make(paper, name="Fixed: out of top-ups", half_width=0.6)
    assert adaptive.fixed
    adaptive.plan["designs"][adaptive.design]["first_wave"] = [10, 10, 10]
    adaptive.save(update_fields=["plan"])
    loop.check_start(adaptive)
    rng = np.random.default_rng(13)
    rate_open_batches(adaptive, paper, rng)
    widths = {e.name: e.half_width for e in estimates(adaptive)}
    assert loop.check_advance(adaptive.pk) == "finished"
    adaptive.refresh_from_db()
    assert adaptive.stop_reason.startswith(
        "the fixed design's labels are in (its first wave and 0 top-ups) and the width +-0.60 "
        "was not reached: "
    )
    stopping = Decision.objects.get(adaptive=adaptive, action="stopping")
    for name, width in widths.items():
        if width > 0.6:
            assert f"+-{width:.2f}" in stopping.detail and name in stopping.detail
    assert adaptive.report["met"] is False
    assert set(Draw.objects.filter(adaptive=adaptive).values_list("wave", flat=True)) == {1}


def test_a_fixed_wave_that_does_not_fit_the_budget_stops_the_study_unchanged(paper):
    adaptive = make(paper, name="Fixed: small budget", half_width=0.2, budget_pence=3000)
    assert adaptive.fixed and sum(adaptive.plan["first_wave"]) > 300
    loop.check_start(adaptive)
    adaptive.refresh_from_db()
    assert adaptive.status == AdaptiveStudy.Status.STOPPING
    assert adaptive.stop_reason.startswith("budget spent: GBP 30.00 left, not enough for wave 1")
    assert not Draw.objects.filter(adaptive=adaptive).exists()  # not halved: nothing sent
    assert loop.check_advance(adaptive.pk) == "finished"
    adaptive.refresh_from_db()
    assert adaptive.report["answer"].startswith("Not answered (budget spent")


def test_the_alt_test_goal_has_no_design_to_choose(paper):
    from adaptive.errors import AdaptiveError

    with pytest.raises(AdaptiveError, match="no design to choose"):
        make(paper, name="Alt-test with a design", goal="alt_test", epsilon=0.2, design="ppi")
    assert not AdaptiveStudy.objects.exists()


def test_the_floor_defaults_to_the_items_for_humans_floor():
    from adaptive.api.serializers import AdaptiveStudySerializer
    from analysis.planning.items_for_humans import FLOOR

    assert AdaptiveStudy().floor == FLOOR == 0.5
    assert AdaptiveStudySerializer().fields["floor"].default == FLOOR
