"""The study monitor's quality-control plots: each rater's ratings against gold
and their spread, drawn once per state of their ratings (the live part that
polls every 5 s asks again only after a change), researchers only."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from django.urls import reverse

from analysis.figures import drawing
from annotator.actions.arrival import check_start_assignment
from annotator.actions.rating import check_complete_assignment, check_rate_item
from annotator.models import Participant, Study
from annotator.quality import participant_quality
from console import monitors
from judging.models import Judgment

pytestmark = pytest.mark.django_db


@pytest.fixture
def draws(monkeypatch):
    calls = []
    draw = drawing.draw

    def counting(figure, fmt):
        calls.append(figure.name)
        return draw(figure, fmt)

    monkeypatch.setattr(drawing, "draw", counting)
    return calls


def rate(study: Study, pid: str, scores, items: int | None = None):
    """Rate the first `items` items of a task (all, and complete it, by
    default), giving `scores` in turn."""
    assignment = check_start_assignment(study, pid=pid)
    count = len(assignment.item_order) if items is None else items
    for position in range(1, count + 1):
        check_rate_item(assignment, position, score=scores[(position - 1) % len(scores)])
    if items is None:
        check_complete_assignment(assignment)
    return assignment


def plot_urls(html: str) -> list[str]:
    return re.findall(r'<img src="(/console/participants/\d+/plot\.svg\?v=\w+)"', html)


def test_each_rater_against_gold(crowd_study):
    rate(crowd_study, "P1", [9, 2, 5, 7])
    (row,) = participant_quality(crowd_study, only=Participant.objects.get(prolific_pid="P1").pk)
    gold = dict(
        Judgment.objects.filter(evaluator__name="gold-human-eval").values_list(
            "response_id", "score"
        )
    )
    rated = Participant.objects.get(prolific_pid="P1").assignment.ratings.filter(
        item__kind="response"
    )
    assert row.scores == sorted(r.score for r in rated)
    assert row.gold_pairs == sorted((gold[r.item.response_id], r.score) for r in rated)
    figure = monitors.rater_plot_figure(row, crowd_study.scale_max)
    scatter, histogram = figure.panels
    assert sum(n for *_, n in scatter.points) == len(row.gold_pairs)
    assert sum(histogram.counts) == len(row.scores)
    assert scatter.title == f"r = {row.gold_correlation:.2f} with gold"
    # the whole table in one call has the same row
    assert next(q for q in participant_quality(crowd_study) if q.rater == "P1") == row


def test_the_monitor_shows_a_plot_per_rater_that_is_drawn_once_per_state(
    client, researcher, crowd_study, draws
):
    client.force_login(researcher)
    live = reverse("console:study_live", args=[crowd_study.pk])
    assert plot_urls(client.get(live).content.decode()) == []  # nobody rated yet
    rate(crowd_study, "P1", [9, 2, 5, 7])
    rate(crowd_study, "P2", [3, 8, 6], items=10)
    urls = plot_urls(client.get(live).content.decode())
    assert len(urls) == 2
    for url in urls:
        answer = client.get(url)
        assert answer.status_code == 200 and answer["Content-Type"] == "image/svg+xml"
        assert ET.fromstring(answer.content).tag == "{http://www.w3.org/2000/svg}svg"
        assert answer["Cache-Control"] == "private, max-age=86400"
    assert len(draws) == 2
    # polls: the same URLs while nothing changes, and nothing drawn again
    for _ in range(3):
        assert plot_urls(client.get(live).content.decode()) == urls
        client.get(urls[0])
    assert len(draws) == 2
    # P2 rates one more item: only P2's plot gets a new URL and is drawn again
    p2 = Participant.objects.get(prolific_pid="P2").assignment
    check_rate_item(p2, p2.ratings.count() + 1, score=10)
    after = plot_urls(client.get(live).content.decode())
    assert after[0] == urls[0] and after[1] != urls[1]
    client.get(after[1])
    assert len(draws) == 3
    # an old URL still answers with the current plot, but the browser keeps nothing
    assert client.get(urls[1])["Cache-Control"] == "no-store"


def test_qc_plots_are_for_researchers_only(client, gold_annotator, crowd_study):
    rate(crowd_study, "P1", [9, 2, 5], items=3)
    url = reverse("console:participant_plot", args=[Participant.objects.get().pk])
    assert client.get(url).status_code == 302
    client.force_login(gold_annotator)
    assert client.get(url).status_code == 403


def test_pairwise_studies_have_no_score_plots(client, researcher, two_meetings):
    from generation.models import System
    from tests.annotator.conftest import make_study

    study = make_study(
        name="Battle",
        rating_type=Study.RatingType.PAIRWISE,
        baseline_system=System.objects.get(name="Synthetic-Hedge"),
    )
    assignment = check_start_assignment(study, pid="P1")
    client.force_login(researcher)
    html = client.get(reverse("console:study", args=[study.pk])).content.decode()
    assert plot_urls(html) == [] and "Raters against gold" not in html
    url = reverse("console:participant_plot", args=[assignment.participant_id])
    assert client.get(url).status_code == 404
