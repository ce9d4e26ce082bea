"""Each participant's Dawid-Skene reliability in the study monitor's QC
table (analysis.report.study_reliability): from the study's own ratings,
once two participants rated the same responses; kept for the state of the
ratings (the monitor polls every 5 s) and fitted again after a new rating."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from analysis.report import study_reliability
from analysis.statistics import rater_models
from annotator.actions.arrival import check_start_assignment
from annotator.actions.rating import check_complete_assignment, check_rate_item
from annotator.models import Participant

pytestmark = pytest.mark.django_db


def rate(study, pid: str, scores) -> None:
    """Rate every item of the next task and complete it, each item's score
    chosen by the item (its rank among the task's item ids), not by where
    the participant's shuffled order puts it: participants who give the same
    scores agree item by item, whatever order each was shown."""
    assignment = check_start_assignment(study, pid=pid)
    ranked = sorted(assignment.item_order)
    for position, item in enumerate(assignment.item_order, 1):
        check_rate_item(assignment, position, score=scores[ranked.index(item) % len(scores)])
    check_complete_assignment(assignment)


def cells(html: str) -> dict[str, str]:
    rows = re.findall(
        r'<tr data-participant="(\w+)">.*?data-reliability>(.*?)</td>', html, flags=re.S
    )
    return dict(rows)


def test_the_qc_table_shows_each_participants_reliability(client, researcher, crowd_study):
    client.force_login(researcher)
    url = reverse("console:study", args=[crowd_study.pk])
    rate(crowd_study, "CAREFUL1", [9, 2, 5, 7])
    only_one = client.get(url).content.decode()
    assert cells(only_one) == {"CAREFUL1": "–"}
    assert "no response rated by two participants or more yet" in only_one
    rate(crowd_study, "CAREFUL2", [9, 2, 5, 7])
    rate(crowd_study, "CAREFUL3", [9, 2, 6, 7])
    rate(crowd_study, "SPAMMER", [1, 10, 10, 1])
    html = client.get(url).content.decode()
    shown = {pid: float(value) for pid, value in cells(html).items()}
    assert set(shown) == {"CAREFUL1", "CAREFUL2", "CAREFUL3", "SPAMMER"}
    assert shown["SPAMMER"] < min(shown[p] for p in ("CAREFUL1", "CAREFUL2", "CAREFUL3"))
    # the same numbers as the rater model fitted by hand on the same ratings
    found = study_reliability.study_rater_reliability(crowd_study)
    pks = dict(Participant.objects.filter(study=crowd_study).values_list("prolific_pid", "pk"))
    for pid, value in shown.items():
        assert value == pytest.approx(found["by_participant"][pks[pid]], abs=0.005)
    assert "Dawid-Skene" in html


def test_the_fit_is_kept_until_a_new_rating(crowd_study, monkeypatch):
    # the study's two tasks go to participants in turn: A1 and A3 share items
    for pid, scores in (("A1", [9, 2, 5, 7]), ("A2", [8, 2, 5, 7]), ("A3", [9, 3, 5, 7])):
        rate(crowd_study, pid, scores)
    fits = []
    fit = rater_models.dawid_skene

    def counting(labels, *args, **kwargs):
        fits.append(len(labels))
        return fit(labels, *args, **kwargs)

    monkeypatch.setattr(rater_models, "dawid_skene", counting)
    first = study_reliability.study_rater_reliability(crowd_study)
    again = study_reliability.study_rater_reliability(crowd_study)
    assert first == again and len(fits) == 1
    # A2's items have no second rater yet: only A1 and A3 get a reliability
    assert len(first["by_participant"]) == 2
    rate(crowd_study, "A4", [9, 2, 4, 7])
    fourth = study_reliability.study_rater_reliability(crowd_study)
    assert len(fits) == 2 and len(fourth["by_participant"]) == 4
