"""One error base (core.errors): every ConcordError reaches the client with its
code and its HTTP status, through the API ({"detail", "code"}) and through the
participant pages (the message page, or {"error", "code"} for the script)."""

import html
import importlib

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.actions.arrival import check_start_assignment
from annotator.actions.rating import check_rate_item
from annotator.actions.status import check_set_study_status
from annotator.errors import QuotaFull, StudyConflict, StudyError
from annotator.models import Participant, Study
from core.api import exception_handler
from core.errors import ConcordError, Conflict, Invalid, UpstreamError
from corpus.models import Dataset
from demo.fake_prolific import FakeProlific
from judging.judging_runs import ensure_metric_evaluators
from judging.models import Evaluator, JudgingRun
from tests.annotator.conftest import entry_url, make_study
from tests.corpus.fixtures import qa_test2
from tests.judging.test_human_review import needs_human

pytestmark = pytest.mark.django_db

# Every module that defines a ConcordError, so that the subclass walk sees them all.
ERROR_MODULES = [
    "analysis.report.selection",
    "annotator.errors",
    "annotator.prolific_api",
    "corpus.importers.errors",
    "judging.evaluators.registry",
    "llm.providers",
    "generation.config",
    "generation.runner",
    "judging.evaluators",
    "judging.human_review",
    "judging.prompts.templates",
    "judging.judging_runs",
    "llm.config",
]


def every_error_class() -> list[type[ConcordError]]:
    for name in ERROR_MODULES:
        importlib.import_module(name)
    found, stack = [], [ConcordError]
    while stack:
        cls = stack.pop()
        found.append(cls)
        stack.extend(cls.__subclasses__())
    return sorted(set(found), key=lambda c: f"{c.__module__}.{c.__qualname__}")


DOMAIN_ERRORS = [
    c for c in every_error_class() if c not in (ConcordError, Invalid, Conflict, UpstreamError)
]


def test_every_domain_error_has_its_own_code():
    codes = {}
    for cls in DOMAIN_ERRORS:
        assert cls.code not in codes, f"{cls.__name__} and {codes.get(cls.code)} share {cls.code}"
        codes[cls.code] = cls.__name__
    assert len(DOMAIN_ERRORS) >= 12  # the classes the views used to map by hand, and more


@pytest.mark.parametrize("cls", DOMAIN_ERRORS, ids=lambda c: c.__name__)
def test_the_handler_answers_each_error_with_its_code_and_status(cls):
    answer = exception_handler(cls("Something is wrong: fix it."), {})
    assert answer.status_code == cls.http_status
    assert answer.data == {"detail": "Something is wrong: fix it.", "code": cls.code}


def test_every_code_is_in_the_catalogue_with_the_status_it_answers():
    """One enum holds every code, one table its HTTP status: each error class
    takes its status from there."""
    from core.errors import HTTP_STATUS, ErrorCode

    assert set(HTTP_STATUS) == set(ErrorCode)
    for cls in every_error_class():
        assert isinstance(cls.code, ErrorCode), cls
        assert cls.http_status == HTTP_STATUS[cls.code], cls


def test_a_code_outside_the_catalogue_or_another_status_fails_at_definition():
    with pytest.raises(ValueError, match="'made_up' is not a valid ErrorCode"):

        class MadeUp(Invalid):
            code = "made_up"  # type: ignore[assignment]  # what the check refuses

    with pytest.raises(TypeError, match="the catalogue says 409"):

        class WrongStatus(Conflict):
            http_status = 400


def test_extra_data_travels_with_the_error():
    answer = exception_handler(Conflict("Frozen.", frozen_fields=["name"]), {})
    assert (answer.status_code, answer.data) == (
        409,
        {"detail": "Frozen.", "code": "conflict", "frozen_fields": ["name"]},
    )


def test_domain_errors_keep_their_old_bases():
    """Code that catches ValueError (configurations, templates, selections) still does."""
    from analysis.report.selection import SelectionError
    from judging.evaluators import ConfigError
    from judging.prompts.templates import TemplateError

    for cls in (SelectionError, ConfigError, TemplateError):
        assert issubclass(cls, ValueError) and issubclass(cls, Invalid)
    assert issubclass(StudyConflict, StudyError)
    assert issubclass(StudyConflict, Conflict)


# --- Through the API -------------------------------------------------------------------------


def study_payload(**changes) -> dict:
    return {
        "name": "API study",
        "kind": "crowd",
        "dataset": qa_test2().pk,
        "mode": "st",
        "systems": ["Synthetic-Echo", "Synthetic-Terse"],
        "raters_per_task": 2,
        "completion_code": "C0DE1234",
    } | changes


def assert_error(answer, status: int, code: str, words: str) -> dict:
    assert answer.status_code == status, answer.content
    assert answer["Content-Type"] == "application/json"
    body = answer.json()
    assert body["code"] == code and words in body["detail"], body
    return body


def test_study_errors_through_the_api(researcher_api, two_meetings):
    refused = researcher_api.post("/api/studies/", study_payload(mode="mt"), format="json")
    assert_error(refused, 400, "study_refused", "No multi-turn run")
    assert not Study.objects.exists()

    study_id = researcher_api.post("/api/studies/", study_payload(), format="json").json()["id"]
    not_built = Study.objects.get(pk=study_id)
    not_built.items.all().delete()
    assert_error(
        researcher_api.post(f"/api/studies/{study_id}/open/"),
        400,
        "study_refused",
        "build them first",
    )
    researcher_api.post(f"/api/studies/{study_id}/build/")
    researcher_api.post(f"/api/studies/{study_id}/open/")
    study = Study.objects.get(pk=study_id)
    check_rate_item(check_start_assignment(study, pid="P1"), 1, score=5)
    changed = researcher_api.patch(
        f"/api/studies/{study_id}/", {"systems": ["Synthetic-Echo"]}, format="json"
    )
    assert_error(changed, 409, "study_conflict", "already has ratings")
    assert_error(
        researcher_api.post(f"/api/studies/{study_id}/build/"), 409, "study_conflict", "ratings"
    )
    assert_error(
        researcher_api.delete(f"/api/studies/{study_id}/"), 409, "study_conflict", "close it"
    )
    participant = Participant.objects.get(study=study)
    no_reason = researcher_api.post(
        f"/api/participants/{participant.pk}/exclude/", {}, format="json"
    )
    assert_error(no_reason, 400, "study_refused", "Give a reason")


def test_prolific_failure_through_the_api(researcher_api, two_meetings, settings):
    study = make_study()
    with FakeProlific() as prolific:
        settings.PROLIFIC_API_TOKEN, settings.PROLIFIC_API_URL = prolific.token, prolific.url
        Study.objects.filter(pk=study.pk).update(prolific_study_id="abc123")
        prolific.fail_next = 1
        answer = researcher_api.post(f"/api/studies/{study.pk}/refill/")
    assert_error(answer, 502, "prolific_error", "Prolific answered 500")


def test_run_errors_through_the_api(researcher_api, two_meetings):
    ensure_metric_evaluators()
    judging = researcher_api.post(
        "/api/judging-runs/",
        {"evaluator": "metric: f1", "dataset": qa_test2().pk, "mode": "mt"},
        format="json",
    )
    assert_error(judging, 400, "judging_refused", "No mt responses")
    assert not JudgingRun.objects.exists()

    done = JudgingRun.objects.create(
        evaluator=Evaluator.objects.get(name="metric: f1"),
        dataset=qa_test2(),
        mode="st",
        status=JudgingRun.Status.DONE,
    )
    # a run's actions answer an outcome in the same shape: {"detail", "code", "changed"}
    resumed = assert_error(
        researcher_api.post(f"/api/judging-runs/{done.pk}/resume/"), 409, "done", "is done"
    )
    assert resumed["changed"] is False

    conv = Dataset.objects.get(version="conv", language="en", split="test2")
    generation = researcher_api.post(
        "/api/runs/", {"system": "Synthetic-Echo", "dataset": conv.pk, "mode": "st"}, format="json"
    )
    assert_error(generation, 400, "generation_refused", "Synthetic-Echo")


def test_review_errors_through_the_api(researcher_api, two_meetings):
    item = needs_human("rubric judge")
    url = f"/api/judge-items/{item.pk}/resolve/"
    assert_error(
        researcher_api.post(url, {"score": 0}, format="json"), 400, "review_invalid", "1 to 10"
    )
    assert researcher_api.post(url, {"score": 8}, format="json").status_code == 200
    again = researcher_api.post(url, {"score": 8}, format="json")
    assert_error(again, 409, "review_conflict", "does not need a human")


def test_frozen_evaluator_through_the_api(researcher_api, two_meetings, admin_user):
    judged = Evaluator.objects.get(name="gpt-4-eval")
    researcher_api.force_login(
        admin_user
    )  # the release's evaluators are shared: a site admin's to change
    answer = researcher_api.patch(
        f"/api/evaluators/{judged.pk}/", {"name": "renamed"}, format="json"
    )
    body = assert_error(answer, 409, "evaluator_frozen", "frozen")
    assert body["frozen_fields"] == ["name"]
    judged.refresh_from_db()
    assert judged.name == "gpt-4-eval"


def test_selection_error_through_the_api_and_the_report_page(
    researcher_api, researcher, client, two_meetings
):
    answer = researcher_api.get("/api/reports/agreement/", {"evaluators": "no-such-judge"})
    assert_error(answer, 400, "selection_invalid", "Unknown evaluator(s): no-such-judge")
    # found by Schemathesis: PostgreSQL cannot be asked for a NUL (was a 500), and
    # "²" passes str.isdigit() but not int() (was a 500)
    nul = researcher_api.get("/api/reports/agreement/?benchmark=a%00b")
    assert_error(nul, 400, "selection_invalid", "benchmark: a NUL character")
    superscript = researcher_api.get("/api/reports/agreement/?study=%C2%B2")
    assert_error(superscript, 400, "selection_invalid", "numeric id")
    client.force_login(researcher)
    page = client.get("/analysis/report/", {"mode": "xx"})
    assert page.status_code == 400 and "mode 'xx'" in html.unescape(page.content.decode())


@pytest.mark.parametrize(
    ("method", "url", "status", "code"),
    [
        ("get", "/api/studies/999999/", 404, "not_found"),
        ("get", "/api/studies/not-an-id/", 404, "not_found"),  # no route: Django's 404
        ("get", "/api/no-such-thing/", 404, "not_found"),
        ("get", "/api/studies/?search=%00", 400, "null_characters_not_allowed"),  # DRF: a list
        ("delete", "/api/evaluators/1/", 405, "method_not_allowed"),
    ],
)
def test_drf_and_django_errors_have_the_same_shape(researcher_api, method, url, status, code):
    answer = getattr(researcher_api, method)(url)
    assert answer.status_code == status
    assert answer["Content-Type"] == "application/json"
    assert answer.json()["code"] == code and answer.json()["detail"]


def test_pages_outside_the_api_keep_the_html_404(client):
    answer = client.get("/no-such-page/")
    assert answer.status_code == 404 and answer["Content-Type"].startswith("text/html")


def test_an_exclusion_reason_must_be_an_object_with_known_fields(researcher_api, two_meetings):
    study = make_study()
    participant = check_start_assignment(study, pid="P1").participant
    url = f"/api/participants/{participant.pk}/reinstate/"
    assert researcher_api.post(url, [None], format="json").status_code == 400
    misspelt = researcher_api.post(url, {"reson": "typo"}, format="json")
    assert misspelt.status_code == 400 and misspelt.json()["reson"] == "Unknown field."
    assert researcher_api.post(url, {"reason": "back"}, format="json").json()["changed"] is False


def test_anonymous_and_forbidden_have_the_same_shape(gold_annotator):
    assert APIClient().get("/api/studies/").json()["code"] == "not_authenticated"
    client = APIClient()
    client.force_login(gold_annotator)
    assert client.get("/api/studies/").json()["code"] == "permission_denied"


# --- Through the participant pages ----------------------------------------------------------


@pytest.fixture
def crowd(two_meetings) -> Study:
    return make_study()


def test_arrival_errors_show_the_message_with_their_status(client, crowd):
    no_pid = client.get(f"/s/{crowd.public_id}/")
    assert no_pid.status_code == 400 and b"must be opened from Prolific" in no_pid.content
    check_set_study_status(crowd, Study.Status.PAUSED)
    paused = client.get(entry_url(crowd, "PID1"))
    assert paused.status_code == 400 and b"paused" in paused.content
    check_set_study_status(crowd, Study.Status.OPEN)
    for pid in ("A1", "A2", "A3", "A4"):
        check_start_assignment(crowd, pid=pid)
    full = client.post(entry_url(crowd, "LATE"), {"PROLIFIC_PID": "LATE", "consent": "yes"})
    assert full.status_code == QuotaFull.http_status == 409
    assert b"All places in this study are taken" in full.content
    assert "<h1>Cannot start</h1>" in full.content.decode()


def test_rating_errors_answer_the_page_and_the_script(client, crowd):
    client.post(entry_url(crowd, "PID1"), {"PROLIFIC_PID": "PID1", "consent": "yes"})
    assignment = Participant.objects.get(prolific_pid="PID1").assignment
    url = reverse("annotator:item", args=[assignment.token, 1])
    page = client.post(url, {"score": "11"})
    assert page.status_code == 400 and b"whole number from 1 to 10" in page.content
    script = client.post(url, {"score": "11"}, HTTP_ACCEPT="application/json")
    assert script.status_code == 400
    assert script.json()["code"] == "study_refused" and "1 to 10" in script.json()["error"]
    unfinished = client.post(reverse("annotator:finish", args=[assignment.token]))
    assert unfinished.status_code == 400 and b"Not finished yet" in unfinished.content
    check_set_study_status(crowd, Study.Status.CLOSED)
    closed = client.post(url, {"score": "5"}, HTTP_ACCEPT="application/json")
    assert (closed.status_code, closed.json()["code"]) == (409, "conflict")


def test_gold_start_shows_the_refusal_with_its_status(client, gold_annotator, two_meetings):
    gold = make_study(name="Gold pass", kind=Study.Kind.GOLD, raters=1)
    gold.gold_annotators.add(gold_annotator)
    check_set_study_status(gold, Study.Status.CLOSED)
    client.force_login(gold_annotator)
    answer = client.post(reverse("annotator:gold_start", args=[gold.pk]))
    assert answer.status_code == 400 and b"closed" in answer.content
