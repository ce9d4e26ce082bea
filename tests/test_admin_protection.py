"""The admin never deletes or edits judged data: runs, responses, evaluators,
judgments, questions, question texts, documents, datasets."""

import json

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from corpus.models import Benchmark, Dataset, Document, Question, QuestionText
from generation.models import GenerationRun, Response, System
from judging.models import Evaluator, Judgment, PairwiseVerdict
from tests.conftest import database_snapshot

pytestmark = pytest.mark.django_db


@pytest.fixture
def unjudged_run(synthetic_data):
    """A run whose one response nobody judged."""
    judged = Response.objects.filter(judgments__isnull=False).first()
    system = System.objects.create(name="unjudged-system", model_name="m")
    run = GenerationRun.objects.create(
        system=system, dataset=judged.run.dataset, mode=judged.run.mode, origin="imported"
    )
    Response.objects.create(run=run, question=judged.question, text="never judged")
    return run


def admin_url(model, view: str, *args) -> str:
    opts = model._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_{view}", args=args)


def texts_of(page) -> list[str]:
    return [str(m) for m in get_messages(page.wsgi_request)]


def bulk_delete(client, model, pks, confirm=False):
    data = {"action": "delete_selected", "_selected_action": [str(pk) for pk in pks]}
    if confirm:
        data["post"] = "yes"
    return client.post(admin_url(model, "changelist"), data, follow=True)


def judged(model):
    return {
        GenerationRun: lambda: GenerationRun.objects.filter(responses__judgments__isnull=False),
        Response: lambda: Response.objects.filter(judgments__isnull=False),
        Question: lambda: Question.objects.filter(responses__judgments__isnull=False),
        Document: lambda: Document.objects.filter(questions__responses__judgments__isnull=False),
        Dataset: lambda: Dataset.objects.filter(runs__responses__judgments__isnull=False),
        Benchmark: lambda: Benchmark.objects.all(),
        System: lambda: System.objects.filter(runs__responses__judgments__isnull=False),
        Evaluator: lambda: Evaluator.objects.filter(judgments__isnull=False),
    }[model]().distinct()


PROTECTED = [GenerationRun, Response, Question, Document, Dataset, Benchmark, System, Evaluator]


@pytest.mark.parametrize("model", PROTECTED, ids=lambda m: m.__name__)
def test_judged_rows_have_no_delete_button_and_their_delete_url_refuses(
    synthetic_data, superuser_client, model
):
    obj = judged(model).first()
    page = superuser_client.get(admin_url(model, "change", obj.pk))
    assert page.status_code == 200
    assert admin_url(model, "delete", obj.pk) not in page.content.decode()
    before = database_snapshot()
    for answer in (
        superuser_client.get(admin_url(model, "delete", obj.pk), follow=True),
        superuser_client.post(admin_url(model, "delete", obj.pk), {"post": "yes"}, follow=True),
    ):
        assert answer.status_code == 200
        assert answer.redirect_chain[-1][0] == admin_url(model, "change", obj.pk)
        (message,) = texts_of(answer)
        assert "cannot be deleted" in message and "a correction is" in message
    assert database_snapshot() == before


@pytest.mark.parametrize("model", PROTECTED, ids=lambda m: m.__name__)
def test_bulk_delete_refuses_a_selection_holding_judged_rows(
    synthetic_data, unjudged_run, superuser_client, model
):
    protected = list(judged(model).values_list("pk", flat=True)[:3])
    free = {
        GenerationRun: [unjudged_run.pk],
        Response: list(unjudged_run.responses.values_list("pk", flat=True)),
        System: [unjudged_run.system_id],
        Evaluator: [Evaluator.objects.create(name="spare", kind="metric").pk],
    }.get(model, [])
    before = database_snapshot()
    answer = bulk_delete(superuser_client, model, protected + free, confirm=True)
    assert answer.status_code == 200
    (message,) = texts_of(answer)
    total = len(protected) + len(free)
    assert message.startswith(f"Nothing was deleted: {len(protected)} of the {total} selected")
    assert "protected" in message
    assert "Cannot delete" not in answer.content.decode()  # not Django's generic page
    assert database_snapshot() == before


def test_unjudged_run_and_response_can_still_be_deleted(unjudged_run, superuser_client):
    response = unjudged_run.responses.get()
    page = superuser_client.get(admin_url(Response, "change", response.pk))
    assert admin_url(Response, "delete", response.pk) in page.content.decode()
    assert "a response is what its system answered" in page.content.decode()
    confirm = bulk_delete(superuser_client, GenerationRun, [unjudged_run.pk])
    assert "Are you sure" in confirm.content.decode()
    bulk_delete(superuser_client, GenerationRun, [unjudged_run.pk], confirm=True)
    assert not GenerationRun.objects.filter(pk=unjudged_run.pk).exists()
    assert not Response.objects.filter(pk=response.pk).exists()


def test_verdicts_and_study_items_protect_too(unjudged_run, superuser_client):
    response = unjudged_run.responses.get()
    judge = Evaluator.objects.create(name="pairwise", kind="llm_pairwise")
    opponent = Response.objects.filter(judgments__isnull=False).first()
    PairwiseVerdict.objects.create(
        evaluator=judge, response=opponent, opponent=response, seed=1, order=0, winner="first"
    )
    answer = bulk_delete(superuser_client, GenerationRun, [unjudged_run.pk], confirm=True)
    assert "Nothing was deleted: 1 of the 1 selected" in texts_of(answer)[0]
    page = superuser_client.get(admin_url(Response, "change", response.pk)).content.decode()
    assert "has 1 pairwise verdict: a correction is a new run / a new study" in page
    assert Response.objects.filter(pk=response.pk).exists()


def test_judged_response_is_read_only_with_a_note(synthetic_data, superuser_client):
    response = Response.objects.filter(judgments__isnull=False).first()
    n = response.judgments.count()
    page = superuser_client.get(admin_url(Response, "change", response.pk))
    html = page.content.decode()
    judgments = f"{n} judgment{'s' if n > 1 else ''}"
    assert f"has {judgments}: a correction is a new run / a new study" in html
    assert 'name="text"' not in html and 'name="_save"' not in html
    answer = superuser_client.post(admin_url(Response, "change", response.pk), {"text": "edited"})
    assert answer.status_code == 403
    assert superuser_client.get(admin_url(Response, "add")).status_code == 403
    response.refresh_from_db()
    assert response.text != "edited"


def test_judgments_are_view_only(synthetic_data, superuser_client):
    judgment = Judgment.objects.first()
    before = database_snapshot()
    assert superuser_client.get(admin_url(Judgment, "change", judgment.pk)).status_code == 200
    post = {"score": 1, "raw_score": 1, "rater": "x"}
    assert (
        superuser_client.post(admin_url(Judgment, "change", judgment.pk), post).status_code == 403
    )
    assert (
        superuser_client.post(
            admin_url(Judgment, "delete", judgment.pk), {"post": "yes"}
        ).status_code
        == 403
    )
    assert superuser_client.get(admin_url(Judgment, "add")).status_code == 403
    listing = superuser_client.get(admin_url(Judgment, "changelist"))
    assert "delete_selected" not in listing.content.decode()
    bulk_delete(superuser_client, Judgment, [judgment.pk], confirm=True)
    assert database_snapshot() == before


def test_judged_evaluator_form_freezes_what_it_is(synthetic_data, superuser_client):
    gpt4 = Evaluator.objects.get(name="gpt-4-eval")
    form = {
        "name": "renamed",
        "kind": "metric",
        "description": "new words",
        "raw_scale_min": -1000,
        "raw_scale_max": 1000,
        "config": "{}",
    }
    before = database_snapshot()
    page = superuser_client.post(admin_url(Evaluator, "change", gpt4.pk), form)
    html = page.content.decode()
    assert page.status_code == 200 and "its name, kind, raw scale minimum" in html
    assert database_snapshot() == before
    form.update(name="gpt-4-eval", kind=gpt4.kind, raw_scale_min=1, raw_scale_max=10)
    form["config"] = json.dumps(gpt4.config)
    saved = superuser_client.post(admin_url(Evaluator, "change", gpt4.pk), form)
    assert saved.status_code == 302, saved.context["errors"]
    gpt4.refresh_from_db()
    assert (gpt4.name, gpt4.description, gpt4.origin) == ("gpt-4-eval", "new words", "paper")
    assert (
        "The ELITR-Bench release"
        in superuser_client.get(admin_url(Evaluator, "change", gpt4.pk)).content.decode()
    )


def change_form_data(page) -> dict:
    """What the browser would post back from an admin change page, unchanged."""
    data = {}
    form = page.context["adminform"].form
    forms = [(form, None)]
    for inline in page.context["inline_admin_formsets"]:
        formset = inline.formset
        for name in formset.management_form.fields:
            data[f"{formset.prefix}-{name}"] = formset.management_form[name].value()
        forms += [(f, formset) for f in formset.forms]
    for each, _ in forms:
        for name in each.fields:
            value = each[name].value()
            if value is None or value is False:
                continue
            data[each.add_prefix(name)] = value
    return data


def test_judged_question_texts_are_read_only_in_the_question_page(synthetic_data, superuser_client):
    question = Question.objects.filter(responses__judgments__isnull=False).first()
    url = admin_url(Question, "change", question.pk)
    page = superuser_client.get(url)
    assert "Read-only: has " in page.content.decode()
    assert "a correction is a new run / a new study" in page.content.decode()
    texts = {t.pk: (t.text, t.reference_answer) for t in question.texts.all()}
    judged_ids = set(
        QuestionText.objects.filter(
            question=question, dataset__runs__responses__judgments__isnull=False
        ).values_list("pk", flat=True)
    )
    assert judged_ids
    form = change_form_data(page)
    prefix = page.context["inline_admin_formsets"][0].formset.prefix
    count = int(form[f"{prefix}-TOTAL_FORMS"])
    for i in range(count):
        form[f"{prefix}-{i}-text"] = "edited wording"
        form[f"{prefix}-{i}-reference_answer"] = "edited answer"
        form[f"{prefix}-{i}-DELETE"] = "on"
    answer = superuser_client.post(url, form)
    assert answer.status_code == 302, answer.context["errors"] if answer.context else ""
    for text in QuestionText.objects.filter(pk__in=judged_ids):
        assert (text.text, text.reference_answer) == texts[text.pk]
    unjudged = set(texts) - judged_ids
    # texts nobody's responses were judged on are still edited (here: deleted)
    assert not QuestionText.objects.filter(pk__in=unjudged).exists()


def test_judged_document_transcript_is_read_only(synthetic_data, superuser_client):
    document = Document.objects.get()
    url = admin_url(Document, "change", document.pk)
    page = superuser_client.get(url)
    html = page.content.decode()
    assert "Read-only transcript" in html and 'name="text"' not in html
    form = change_form_data(page)
    form["text"] = "a new transcript"
    assert superuser_client.post(url, form).status_code == 302
    document.refresh_from_db()
    assert document.text != "a new transcript"
