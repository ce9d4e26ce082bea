"""Invariants the database itself enforces, whatever code writes."""

import os

import pytest
from django.db import IntegrityError, connection, transaction

from corpus.models import Dataset, Question
from generation.models import GenerationRun, Response, System
from judging.importing import import_elitr_bench
from judging.models import Evaluator, Judgment

pytestmark = pytest.mark.django_db


def test_ci_runs_on_postgresql():
    if os.environ.get("CONCORD_REQUIRE_SERVICES") == "1":
        assert connection.vendor == "postgresql"
    else:
        pytest.skip(f"not CI: running on {connection.vendor}")


@pytest.fixture
def response(synthetic_source):
    import_elitr_bench(synthetic_source, with_responses=True)
    return Response.objects.select_related("run", "question").first()


def refused(create) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        create()


def test_one_response_per_run_and_question(response):
    refused(lambda: Response.objects.create(run=response.run, question=response.question, text="x"))


def test_one_seedless_run_per_system_dataset_mode(response):
    run = response.run
    refused(
        lambda: GenerationRun.objects.create(system=run.system, dataset=run.dataset, mode=run.mode)
    )
    GenerationRun.objects.create(system=run.system, dataset=run.dataset, mode=run.mode, seed=2023)
    refused(
        lambda: GenerationRun.objects.create(
            system=run.system, dataset=run.dataset, mode=run.mode, seed=2023
        )
    )


def test_one_judgment_per_evaluator_response_seed_order(response):
    evaluator = Evaluator.objects.get(name="gpt-4-eval")
    fields = {"raw_scale_min": 1, "raw_scale_max": 10, "score": 5, "raw_score": 5}
    refused(lambda: Judgment.objects.create(evaluator=evaluator, response=response, **fields))
    Judgment.objects.create(evaluator=evaluator, response=response, seed=2024, **fields)
    refused(
        lambda: Judgment.objects.create(evaluator=evaluator, response=response, seed=2024, **fields)
    )
    Judgment.objects.create(evaluator=evaluator, response=response, seed=2024, order=1, **fields)


@pytest.mark.parametrize(("score", "raw"), [(11, 5), (0.5, 5), (5, 12)])
def test_scores_stay_on_their_scales(response, score, raw):
    evaluator = Evaluator.objects.get(name="gpt-4-eval")
    refused(
        lambda: Judgment.objects.create(
            evaluator=evaluator,
            response=response,
            seed=7,
            score=score,
            raw_score=raw,
            raw_scale_min=1,
            raw_scale_max=10,
        )
    )


def test_choices_are_checked_by_the_database(response):
    refused(lambda: Question.objects.filter(pk=response.question.pk).update(question_type="why"))
    refused(lambda: Question.objects.filter(pk=response.question.pk).update(answer_position="X"))
    refused(lambda: Dataset.objects.filter(pk=response.run.dataset_id).update(version="chat"))
    refused(lambda: System.objects.filter(pk=response.run.system_id).update(backend="magic"))
    refused(lambda: Evaluator.objects.filter(name="gpt-4-eval").update(kind="oracle"))


def test_user_roles(django_user_model):
    researcher = django_user_model.objects.create_user("r", role="researcher")
    gold = django_user_model.objects.create_user("g", role="gold_annotator")
    boss = django_user_model.objects.create_superuser("s", role="gold_annotator")
    assert researcher.is_researcher and not researcher.is_gold_annotator
    assert gold.is_gold_annotator and not gold.is_researcher
    assert boss.is_researcher
    refused(lambda: django_user_model.objects.create_user("x", role="crowd"))
