"""The rating page's HTML without JavaScript: the scale a study asks for, the
pairwise layout, the comment and flag fields, the practice feedback."""

import pytest

from annotator import defaults
from annotator.actions.arrival import check_start_assignment
from annotator.models import Rating
from generation.models import System
from tests.annotator.conftest import item_url, make_study

pytestmark = pytest.mark.django_db


def test_labelled_five_point_scale(client, two_meetings):
    labels = ["Wrong", "Poor", "Partly right", "Mostly right", "Right"]
    study = make_study(name="Five points", scale_max=5, scale_labels=labels)
    assignment = check_start_assignment(study, pid="P5")
    html = client.get(item_url(assignment, 1)).content.decode()
    assert html.count('name="score"') == 5 and 'value="6"' not in html
    assert all(f"<small>{label}</small>" in html for label in labels)
    assert "Keys: 1-5 rate" in html and "0 (=10)" not in html
    assert 'name="comment"' in html and 'value="cannot_judge"' in html


def test_comment_and_flag_posted_with_the_form_are_shown_again(client, crowd_study):
    assignment = check_start_assignment(crowd_study, pid="P1")
    answer = client.post(
        item_url(assignment, 1), {"score": "4", "comment": "Odd <b>CA</b>", "flag": "wrong_item"}
    )
    assert answer.status_code == 302
    html = client.get(item_url(assignment, 1)).content.decode()
    assert 'value="4" checked' in html
    assert "Odd &lt;b&gt;CA&lt;/b&gt;</textarea>" in html  # escaped
    assert 'value="wrong_item" checked' in html and "comment and report saved" in html
    assert '<details class="note-box" id="note-box" open>' in html


def test_pairwise_page(client, two_meetings):
    study = make_study(
        name="Pairwise",
        rating_type="pairwise",
        baseline_system=System.objects.get(name="Synthetic-Terse"),
    )
    assignment = check_start_assignment(study, pid="PW")
    html = client.get(item_url(assignment, 1)).content.decode()
    assert 'id="answer-a"' in html and 'id="answer-b"' in html and 'name="score"' not in html
    for value in ("A", "tie", "B"):
        assert f'name="choice" value="{value}"' in html
    assert client.post(item_url(assignment, 1), {"choice": "tie"}).status_code == 302
    assert 'value="tie" checked' in client.get(item_url(assignment, 1)).content.decode()
    assert Rating.objects.get().choice == "tie"


def test_practice_feedback_without_javascript(client, two_meetings):
    study = make_study(practice_items=defaults.PRACTICE_ITEMS, practice_pass=2)
    assignment = check_start_assignment(study, pid="PQ")
    first = client.get(item_url(assignment, 1)).content.decode()
    assert (
        'id="practice-note"' in first
        and 'id="feedback" role="status" aria-live="polite" hidden' in first
    )
    answer = client.post(item_url(assignment, 1), {"score": "1"})
    assert answer["Location"] == item_url(assignment, 1) + "?feedback=1"
    html = client.get(answer["Location"]).content.decode()
    assert (
        "The expected rating was" in html and "hidden>" not in html.split('id="feedback"')[1][:80]
    )
    assert '<a class="button" id="next" href="' + item_url(assignment, 2) + '"' in html
