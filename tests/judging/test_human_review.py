"""A researcher resolves an item that needs a human, through the API and the
admin: a score on the judge's own scale for a scoring judge, A / B / tie (never
a number) for a pairwise judge."""

import pytest
from rest_framework.test import APIClient

from corpus.models import Dataset
from judging.human_review import ReviewError, check_resolve_item
from judging.judging_runs import create_judging_run
from judging.models import Evaluator, JudgeItem, Judgment, PairwiseVerdict
from judging.parsers import Verdict
from llm.models import LLMCall
from tests.conftest import database_snapshot

pytestmark = pytest.mark.django_db

JUDGE = {"server": "vllm", "base_url": "http://127.0.0.1:9/v1", "model": "m"}
UNREADABLE = "Both are fine I guess, maybe the first."


def needs_human(name: str, kind: str = "llm_rubric", **settings) -> JudgeItem:
    """An item whose judge answered something no parser reads."""
    evaluator = Evaluator.objects.create(name=name, kind=kind, config={**JUDGE, **settings})
    run = create_judging_run(
        evaluator, Dataset.objects.get(version="qa", language="en", split="test2"), "st"
    )
    call = LLMCall.objects.create(
        request_hash=f"{name:0<64}"[:64],
        base_url="x",
        model="m",
        status="ok",
        raw_output=UNREADABLE,
    )
    item = JudgeItem.objects.filter(run=run, order=1 if kind == "llm_pairwise" else 0).first()
    JudgeItem.objects.filter(pk=item.pk).update(
        status="needs_human", outcome="parse_failure", call=call
    )
    item.refresh_from_db()
    return item


@pytest.fixture
def pairwise_item(two_meetings):
    return needs_human(
        "battle judge", kind="llm_pairwise", protocol="pairwise", baseline="Synthetic-Hedge"
    )


def resolve(researcher_api, item, body):
    return researcher_api.post(f"/api/judge-items/{item.pk}/resolve/", body, format="json")


def test_the_api_lists_what_needs_a_human_with_the_judges_answer(pairwise_item, researcher_api):
    listed = researcher_api.get("/api/judge-items/", {"status": "needs_human"}).json()
    assert listed["count"] == 1
    row = listed["results"][0]
    assert (row["id"], row["evaluator"], row["raw_answer"]) == (
        pairwise_item.pk,
        "battle judge",
        UNREADABLE,
    )
    assert (row["order"], row["opponent"]) == (1, pairwise_item.opponent_id)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"score": 1}, "takes a verdict: A (the answer shown first), B"),
        ({"score": 0}, "takes a verdict"),
        ({"verdict": "C"}, "is not a valid choice"),
        ({"verdict": "first"}, "is not a valid choice"),
        ({"verdict": 1}, "is not a valid choice"),
        ({"verdict": "A", "score": 0}, "Send either score"),
        ({}, "Send either score"),
        ({"verdict": "A", "winner": "first"}, "Unknown field"),
    ],
)
def test_a_pairwise_item_takes_a_b_or_tie_and_nothing_else(
    pairwise_item, researcher_api, body, message
):
    before = database_snapshot()
    answer = resolve(researcher_api, pairwise_item, body)
    assert answer.status_code == 400, answer.content
    assert message in answer.content.decode()
    assert database_snapshot() == before


@pytest.mark.parametrize(("label", "winner"), [("A", "first"), ("B", "second"), ("tie", "tie")])
def test_a_pairwise_item_resolved_through_the_api_is_a_verdict(
    pairwise_item, researcher_api, researcher, label, winner
):
    answer = resolve(researcher_api, pairwise_item, {"verdict": label})
    assert answer.status_code == 200, answer.content
    assert answer.json()["status"] == "resolved"
    verdict = PairwiseVerdict.objects.get()
    assert (verdict.response_id, verdict.opponent_id) == (
        pairwise_item.response_id,
        pairwise_item.opponent_id,
    )
    assert (verdict.order, verdict.winner, verdict.seed) == (1, winner, pairwise_item.seed)
    assert UNREADABLE in verdict.feedback and "rita" in verdict.feedback
    pairwise_item.refresh_from_db()
    assert pairwise_item.detail == f"verdict {label} entered by rita"
    assert not Judgment.objects.filter(evaluator__name="battle judge").exists()
    # once resolved, it is not resolved again
    again = resolve(researcher_api, pairwise_item, {"verdict": "A"})
    assert again.status_code == 409 and "does not need a human" in again.json()["detail"]
    assert PairwiseVerdict.objects.get().winner == winner


def test_a_rubric_item_takes_a_score_on_the_judges_scale(two_meetings, researcher_api):
    item = needs_human("rubric judge")
    before = database_snapshot()
    for body in ({"score": 11}, {"score": 0}, {"verdict": "A"}, {"score": 7.5}, {"score": True}):
        answer = resolve(researcher_api, item, body)
        assert answer.status_code == 400, (body, answer.content)
    assert (
        "Enter a whole number from 1 to 10."
        in resolve(researcher_api, item, {"score": 0}).json()["detail"]
    )
    assert database_snapshot() == before
    assert resolve(researcher_api, item, {"score": 8}).status_code == 200
    judgment = Judgment.objects.get(evaluator__name="rubric judge")
    assert (judgment.raw_score, judgment.score, judgment.response_id) == (8, 8, item.response_id)


def test_a_czech_judges_zero_is_a_score_too(two_meetings, researcher_api):
    item = needs_human("czech judge", language="cs")
    assert resolve(researcher_api, item, {"score": 0}).status_code == 200
    judgment = Judgment.objects.get(evaluator__name="czech judge")
    assert (judgment.raw_score, judgment.score, judgment.raw_scale_min) == (0, 1, 0)


def test_only_researchers_resolve(pairwise_item, gold_annotator):
    client = APIClient()
    client.force_login(gold_annotator)
    assert resolve(client, pairwise_item, {"verdict": "A"}).status_code == 403
    assert resolve(APIClient(), pairwise_item, {"verdict": "A"}).status_code in (401, 403)
    assert not PairwiseVerdict.objects.exists()


def test_the_service_takes_a_verdict_never_a_number(pairwise_item, researcher):
    for wrong in (0, 1, 2, "B"):
        with pytest.raises(ReviewError, match="takes a verdict"):
            check_resolve_item(pairwise_item, wrong, researcher)
    check_resolve_item(pairwise_item, Verdict.B, researcher)
    assert PairwiseVerdict.objects.get().winner == "second"


def test_the_admin_offers_a_b_or_tie_for_a_pairwise_item(pairwise_item, client, django_user_model):
    boss = django_user_model.objects.create_superuser("boss", "b@example.org", "pw-boss-123")
    client.force_login(boss)
    url = f"/admin/judging/judgeitem/{pairwise_item.pk}/change/"
    page = client.get(url).content.decode()
    assert UNREADABLE in page and "Store this verdict" in page
    assert 'type="radio" name="verdict" value="A"' in page
    assert 'value="B"' in page and 'value="tie"' in page
    assert 'name="raw_score"' not in page
    answer = client.post(url, {"raw_score": "1"}, follow=True)  # a number is no verdict
    assert "Nothing stored" in answer.content.decode()
    client.post(url, {"verdict": "second"})
    assert not PairwiseVerdict.objects.exists()
    client.post(url, {"verdict": "tie"})
    verdict = PairwiseVerdict.objects.get()
    assert (verdict.response_id, verdict.order, verdict.winner) == (
        pairwise_item.response_id,
        1,
        "tie",
    )
    pairwise_item.refresh_from_db()
    assert pairwise_item.status == "resolved"
    assert "Store this verdict" not in client.get(url).content.decode()


def test_the_admin_asks_a_czech_rubric_item_for_a_score_from_0(
    two_meetings, client, django_user_model
):
    item = needs_human("czech judge", language="cs")
    boss = django_user_model.objects.create_superuser("boss", "b@example.org", "pw-boss-123")
    client.force_login(boss)
    url = f"/admin/judging/judgeitem/{item.pk}/change/"
    page = client.get(url).content.decode()
    assert "Store this score" in page and "a score from 0 to 10 (0: not in Czech)" in page
    assert 'name="verdict"' not in page
    client.post(url, {"raw_score": "0"})
    judgment = Judgment.objects.get(evaluator__name="czech judge")
    assert (judgment.raw_score, judgment.score) == (0, 1)
