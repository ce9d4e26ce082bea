"""The admin as a researcher uses it."""

import pytest
from django.urls import reverse

from corpus.models import Document, Question
from generation.models import Response, System
from judging.models import BenchmarkImport

pytestmark = pytest.mark.django_db


CHANGELISTS = [
    "users_user",
    "corpus_benchmark",
    "corpus_dataset",
    "corpus_document",
    "corpus_question",
    "generation_system",
    "generation_generationrun",
    "generation_response",
    "judging_evaluator",
    "judging_judgment",
    "judging_benchmarkimport",
    "adaptive_adaptivestudy",
    "adaptive_draw",
    "adaptive_decision",
]


@pytest.mark.parametrize("name", CHANGELISTS)
def test_changelists_open(synthetic_data, superuser_client, name):
    response = superuser_client.get(reverse(f"admin:{name}_changelist"))
    assert response.status_code == 200


def test_document_page_shows_transcript_with_its_questions(synthetic_data, superuser_client):
    document = Document.objects.get()
    page = superuser_client.get(reverse("admin:corpus_document_change", args=[document.pk]))
    html = page.content.decode()
    assert "concord-transcript" in html and "PERSON2) I will prepare the annotation" in html
    assert "When is the deadline for the workshop paper?" in html
    assert "Who will prepare its guidelines?" in html  # the Conv wording
    assert "Kdy je termín pro článek na workshop?" in html  # Czech


def test_question_search_and_filters(synthetic_data, superuser_client):
    url = reverse("admin:corpus_question_changelist")
    found = superuser_client.get(url, {"q": "deadline"})
    assert found.context["cl"].result_count == 1
    middle = superuser_client.get(url, {"answer_position__exact": "M"})
    assert middle.context["cl"].result_count == 2
    conv = superuser_client.get(url, {"version": "conv", "question_type__exact": "who"})
    assert conv.context["cl"].result_count == 2


def test_response_list_and_page_show_scores(
    synthetic_data, superuser_client, django_assert_max_num_queries
):
    url = reverse("admin:generation_response_changelist")
    echo = System.objects.get(name="Synthetic-Echo")
    with django_assert_max_num_queries(12):
        listing = superuser_client.get(url, {"run__system__id__exact": echo.pk})
    assert listing.context["cl"].result_count == 6
    assert "gold-human-eval: 9" in listing.content.decode()
    response = Response.objects.filter(run__system__name="Synthetic-Hedge").first()
    page = superuser_client.get(reverse("admin:generation_response_change", args=[response.pk]))
    html = page.content.decode()
    assert "The transcript does not say this clearly." in html
    assert "gold-human-eval" in html and "Reference:" in html


def test_import_started_from_the_admin_runs_as_a_task(
    synthetic_source, superuser_client, eager_celery, django_capture_on_commit_callbacks
):
    url = reverse("admin:judging_benchmarkimport_add")
    form = {
        "source": str(synthetic_source),
        "versions": "qa,conv",
        "languages": "en,cs",
        "with_responses": "on",
    }
    with django_capture_on_commit_callbacks(execute=True):
        answer = superuser_client.post(url, form)
    assert answer.status_code == 302
    job = BenchmarkImport.objects.get()
    assert job.status == BenchmarkImport.Status.DONE, job.message
    assert "test2: 1 meetings, 6 questions" in job.message
    assert (job.done, job.total) == (3, 3)
    assert Question.objects.count() == 6
    page = superuser_client.get(reverse("admin:judging_benchmarkimport_change", args=[job.pk]))
    assert "Imported." in page.content.decode()


def test_failed_admin_import_records_the_reason(
    tmp_path, superuser_client, eager_celery, django_capture_on_commit_callbacks
):
    form = {"source": str(tmp_path / "missing"), "versions": "qa", "languages": "en"}
    with django_capture_on_commit_callbacks(execute=True):
        superuser_client.post(reverse("admin:judging_benchmarkimport_add"), form)
    job = BenchmarkImport.objects.get()
    assert job.status == BenchmarkImport.Status.FAILED
    assert "no such file or folder" in job.message
    assert Document.objects.count() == 0


def test_gold_annotator_cannot_use_the_admin(client, gold_annotator):
    client.force_login(gold_annotator)
    response = client.get(reverse("admin:index"))
    assert response.status_code == 302 and "/login/" in response["Location"]
