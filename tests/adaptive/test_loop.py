"""The whole loop on the paper's data: a researcher states a goal, simulated
participants (bots rating as the gold annotator did, with noise and
dropout) take the batches' places on the fake Prolific server wave after
wave, and the loop stops itself, closes the studies there, pays the bonus
and writes its report. These tests run the adaptive design (stated: the plan
chooses a fixed design on this data); tests/adaptive/test_designs.py runs the
fixed ones."""

from __future__ import annotations

import numpy as np
import pytest

from adaptive import loop
from adaptive.estimates import estimates
from adaptive.models import AdaptiveStudy, Decision, Draw, Snapshot
from adaptive.prolific import sync_on_prolific
from annotator.models import Study
from annotator.prolific_api import ProlificClient
from demo.bots import rate_as_bots
from demo.fake_prolific import FakeProlific
from judging.models import Judgment
from tests.adaptive.conftest import make

pytestmark = pytest.mark.django_db


def run_to_the_end(adaptive, paper, prolific, client, rng, most_steps=60):
    for _ in range(most_steps):
        sync_on_prolific(adaptive.pk, client)
        for study in loop.batches(adaptive):
            if study.status == Study.Status.OPEN:
                rate_as_bots(
                    study, lambda rid: paper["truth"][rid], rng, prolific=prolific, dropout=0.1
                )
        loop.check_advance(adaptive.pk)
        adaptive.refresh_from_db()
        if adaptive.status == AdaptiveStudy.Status.FINISHED:
            sync_on_prolific(adaptive.pk, client)
            return adaptive
    raise AssertionError(f"still {adaptive.status} after {most_steps} steps")


def test_the_loop_answers_its_goal_and_closes_everything(paper, researcher):
    from annotator.prolific_records import ParticipantGroup

    qualified = ParticipantGroup.objects.create(
        name="qualified raters", kind="allow", prolific_id="group0qualified"
    )
    adaptive = make(
        paper,
        researcher,
        groups=[qualified],
        design="adaptive",
        on_prolific=True,
        bonus_pence=50,
        closing_message="Thanks!",
    )
    assert adaptive.status == AdaptiveStudy.Status.PLANNED
    assert adaptive.plan["places_median"] > 0
    assert adaptive.design == adaptive.plan["design"] == "adaptive"
    assert adaptive.plan["planned_design"] == "ppi"  # the researcher chose over the plan
    assert 0 <= adaptive.plan["answered_within_budget"] <= 1
    assert not Draw.objects.filter(adaptive=adaptive).exists()  # nothing spent before start

    with FakeProlific() as prolific:
        client = ProlificClient(prolific.token, prolific.url)
        loop.check_start(adaptive, researcher)
        first = loop.batches(adaptive)
        assert first and all(s.status == Study.Status.OPEN for s in first)
        sync_on_prolific(adaptive.pk, client)
        assert {
            prolific.studies[s.prolific_study_id]["status"] for s in loop.batches(adaptive)
        } == {"ACTIVE"}
        # every batch is recruited through the allowlist
        allowlist = {
            "filter_id": "participant_group_allowlist",
            "selected_values": ["group0qualified"],
        }
        batches = loop.batches(adaptive)
        assert all(prolific.studies[s.prolific_study_id]["filters"] == [allowlist] for s in batches)
        adaptive = run_to_the_end(adaptive, paper, prolific, client, np.random.default_rng(1))

        report = adaptive.report
        assert report["met"] is True and adaptive.stop_reason == "the goal is met"
        for estimate in report["estimates"]:
            assert estimate["upper"] - estimate["lower"] <= 2 * 1.0 + 1e-9
            assert estimate["labels"] >= 20
        # the report counts exactly the labels the batches' judgments hold
        batches = loop.batches(adaptive)
        evaluators = [s.evaluator_id for s in batches]
        assert report["labels"] <= Judgment.objects.filter(evaluator_id__in=evaluators).count()
        assert report["spent_pence"] <= adaptive.budget_pence
        # every batch closed, here and on Prolific
        assert all(s.status == Study.Status.CLOSED for s in batches)
        assert {prolific.studies[s.prolific_study_id]["status"] for s in batches} == {"COMPLETED"}
        assert all(prolific.studies[s.prolific_study_id]["filters"] == [allowlist] for s in batches)
        # the bonus, paid once per accepted participant, and the closing message
        paid = [p for p in prolific.paid]
        assert paid and len({who for _, who, _ in paid}) == len(paid)
        assert {m["body"] for m in prolific.messages} == {"Thanks!"}
        assert {m["to"] for m in prolific.messages} == {who for _, who, _ in paid}
        sent = len(prolific.messages)
        adaptive.refresh_from_db()
        assert adaptive.closed_out_at is not None  # one worker took the closing work
        sync_on_prolific(adaptive.pk, client)  # again: nothing is paid or sent twice
        assert len(prolific.paid) == len(paid)
        assert len(prolific.messages) == sent

    actions = list(Decision.objects.filter(adaptive=adaptive).values_list("action", flat=True))
    assert actions[:4] == ["planned", "design", "started", "wave"]
    chosen = Decision.objects.get(adaptive=adaptive, action="design")
    assert chosen.actor == researcher and "over the plan's" in chosen.detail
    # draws sent with their recorded probability: some are not sent
    assert set(Draw.objects.filter(adaptive=adaptive).values_list("sent", flat=True)) == {
        True,
        False,
    }
    assert "prolific" not in actions  # no request failed
    assert actions[actions.index("stopping") :][:2] == ["stopping", "finished"]
    assert actions.count("bonus") == actions.count("message") == len(batches)
    assert actions.count("wave") >= 2  # it took more than one wave
    snapshots = list(Snapshot.objects.filter(adaptive=adaptive))
    assert len(snapshots) >= 2
    assert [s.labels for s in snapshots] == sorted(s.labels for s in snapshots)
    assert snapshots[-1].met


def test_budget_spent_stops_the_loop_without_an_answer(paper):
    adaptive = make(
        paper, half_width=0.2, budget_pence=3000, name="Adaptive: small budget", design="adaptive"
    )
    loop.check_start(adaptive)
    rng = np.random.default_rng(2)
    for _ in range(30):
        for study in loop.batches(adaptive):
            if study.status == Study.Status.OPEN:
                rate_as_bots(study, lambda rid: paper["truth"][rid], rng, dropout=0)
        loop.check_advance(adaptive.pk)
        adaptive.refresh_from_db()
        if adaptive.status == AdaptiveStudy.Status.FINISHED:
            break
    assert adaptive.status == AdaptiveStudy.Status.FINISHED
    assert adaptive.stop_reason.startswith("budget spent")
    assert adaptive.report["met"] is False
    assert adaptive.report["answer"].startswith("Not answered (budget spent")
    assert adaptive.report["spent_pence"] <= 3000


def test_estimates_match_a_direct_computation(paper):
    """The monitor's interval equals the increments and sequence computed by
    hand from the same draws and labels: no running intersection, a
    pseudo-observation at each end of the increments of the system's pool."""
    from analysis.statistics.anytime import active_increments, confidence_sequence, increment_ends

    adaptive = make(paper, name="Adaptive: direct", design="adaptive")
    loop.check_start(adaptive)
    rng = np.random.default_rng(3)
    for study in loop.batches(adaptive):
        rate_as_bots(study, lambda rid: paper["truth"][rid], rng, dropout=0)
    found = {e.system_id: e for e in estimates(adaptive)}
    labels = {
        (j.evaluator.study.pk, j.response_id): j.score
        for j in Judgment.objects.filter(
            evaluator__study__in=loop.batches(adaptive)
        ).select_related("evaluator__study")
    }
    for system in paper["systems"]:
        draws = list(Draw.objects.filter(adaptive=adaptive, system=system).order_by("position"))
        judge = [adaptive.pool[str(d.response_id)][1] for d in draws]
        human = [labels.get((d.study_id, d.response_id), np.nan) for d in draws]
        z, _ = active_increments(
            np.array(judge),
            np.array(human),
            np.array([d.sent for d in draws]),
            np.array([d.probability for d in draws]),
        )
        pool = [entry for entry in adaptive.pool.values() if entry[0] == system.pk]
        sequence = confidence_sequence(
            z,
            alpha=0.05,
            t_opt=adaptive.t_opt,
            scale=adaptive.scale,
            bounds=(1, 10),
            pad=increment_ends(
                np.array([e[1] for e in pool]), np.array([e[2] for e in pool]), (1, 10)
            ),
        )
        assert found[system.pk].draws == len(draws) and not all(d.sent for d in draws)
        assert found[system.pk].mean == pytest.approx(sequence.mean[-1], abs=1e-12)
        assert found[system.pk].lower == pytest.approx(sequence.lower[-1], abs=1e-12)
        assert found[system.pk].upper == pytest.approx(sequence.upper[-1], abs=1e-12)


def test_batches_rate_each_response_once_and_group_tasks_of_like_size(paper):
    from collections import Counter

    from generation.models import Response

    adaptive = make(paper, name="Adaptive: batches", design="adaptive")
    draws = loop.draw_wave(adaptive, 1, {s.pk: 400 for s in paper["systems"]})
    sent = [d for d in draws if d.sent]
    # with 400 draws of a system's 130 responses, some are sent twice or more
    assert max(Counter(d.response_id for d in sent).values()) >= 2
    parts = loop.split_into_batches(draws)
    assert sorted(id(d) for part in parts for d in part) == sorted(id(d) for d in sent)
    document_of = dict(Response.objects.values_list("pk", "question__document_id"))
    for part in parts:
        assert len({d.response_id for d in part}) == len(part)  # once per study
        sizes = Counter(document_of[d.response_id] for d in part).values()
        assert max(sizes) <= 1.5 * min(sizes)  # one reward fits every task
    # gold studies have one task: only the rounds
    rounds = loop.split_into_batches(draws, by_task_size=False)
    assert len(rounds) == max(Counter(d.response_id for d in sent).values())


def test_without_a_second_judge_the_judges_own_spread_sets_the_probabilities(paper):
    from adaptive.pool import build_pool
    from generation.models import Response
    from judging.models import Evaluator

    sampled = Evaluator.objects.create(name="a judge sampled twice", kind="llm_rubric")
    responses = list(
        Response.objects.filter(
            run__system__in=paper["systems"], run__dataset=paper["dataset"], run__mode="st"
        ).values_list("pk", flat=True)
    )
    unsure = set(responses[::5])  # its two samples disagree by 4 points on these
    Judgment.objects.bulk_create(
        Judgment(
            evaluator=sampled,
            response_id=rid,
            seed=seed,
            score=5 + (2 if rid in unsure and seed == 1 else -2 if rid in unsure else 0),
            raw_score=5,
            raw_scale_min=1,
            raw_scale_max=10,
        )
        for rid in responses
        for seed in (1, 2)
    )
    pool = build_pool(paper["dataset"], "st", paper["systems"], sampled, None, 0.3, 0.3)
    sure_p = [p for rid, (_, _, p) in pool.items() if int(rid) not in unsure]
    unsure_p = [p for rid, (_, _, p) in pool.items() if int(rid) in unsure]
    assert min(unsure_p) > max(sure_p) > 0
    for system in paper["systems"]:
        mine = [p for _, (s, _, p) in pool.items() if s == system.pk]
        assert np.mean(mine) == pytest.approx(0.3)
    # a judge scored once: every response alike
    flat = build_pool(paper["dataset"], "st", paper["systems"], paper["judge"], None, 0.3, 0.3)
    assert len({round(p, 12) for _, _, p in flat.values()}) == 1


def test_an_excluded_rater_s_draws_wait_again_and_prolific_gets_a_place_for_them(paper, researcher):
    from annotator.actions.participants import check_exclude_participant
    from annotator.models import Participant

    adaptive = make(paper, researcher, on_prolific=True, name="Adaptive: exclusion")
    rng = np.random.default_rng(4)
    with FakeProlific() as prolific:
        client = ProlificClient(prolific.token, prolific.url)
        loop.check_start(adaptive, researcher)
        sync_on_prolific(adaptive.pk, client)
        batch = loop.batches(adaptive)[0]
        rate_as_bots(batch, lambda rid: paper["truth"][rid], rng, prolific=prolific, dropout=0)
        waiting = sum(e.pending for e in estimates(adaptive))
        places = prolific.studies[batch.prolific_study_id]["total_available_places"]
        rater = Participant.objects.filter(study=batch).first()
        check_exclude_participant(rater, researcher, "Rated every item 1 in under a second.")
        assert sum(e.pending for e in estimates(adaptive)) > waiting  # their draws wait again
        sync_on_prolific(adaptive.pk, client)
        assert prolific.studies[batch.prolific_study_id]["total_available_places"] == places + 1
        assert not Decision.objects.filter(adaptive=adaptive, action="prolific").exists()
        counts = rate_as_bots(
            batch, lambda rid: paper["truth"][rid], rng, prolific=prolific, dropout=0
        )
        assert counts["completed"] == 1  # someone else took the freed place
        assert sum(e.pending for e in estimates(adaptive)) == waiting
