"""One of every kind of object the API serves, in the default project: a
built and open crowd study with a participant who rated and commented, a
metric's judging run, an LLM judge's run with an item that needs a human, a
team's own system, and an adaptive study running on the synthetic meetings.
The Schemathesis run and the project-isolation tests share it."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from adaptive.loop import check_create, check_start
from adaptive.models import AdaptiveStudy
from annotator.actions.arrival import check_start_assignment
from annotator.actions.rating import check_rate_item
from annotator.models import Study
from corpus.models import Dataset
from generation.models import GenerationRun, Response, System
from judging.judging_runs import create_judging_run, ensure_metric_evaluators
from judging.models import Evaluator
from tests.annotator.conftest import make_study
from tests.judging.test_human_review import needs_human
from users.models import Project, User


def api_models() -> dict[str, type]:
    """The model a path's {id} names, per collection of /api/."""
    from annotator.models import Participant
    from corpus.models import Document, Question
    from generation.models import Response
    from judging.models import JudgeItem, JudgingRun, Judgment
    from webhooks.models import WebhookEndpoint

    return {
        "datasets": Dataset,
        "documents": Document,
        "questions": Question,
        "systems": System,
        "runs": GenerationRun,
        "responses": Response,
        "evaluators": Evaluator,
        "judgments": Judgment,
        "judging-runs": JudgingRun,
        "judge-items": JudgeItem,
        "studies": Study,
        "participants": Participant,
        "adaptive-studies": AdaptiveStudy,
        "webhooks": WebhookEndpoint,
    }


def build_api_objects(researcher: User) -> Study:
    study = make_study(gold_evaluator=Evaluator.objects.get(name="gold-human-eval"))
    assignment = check_start_assignment(study, pid="RATER1")
    check_rate_item(assignment, 1, score=7, comment="The reference is wrong.", flag="wrong_item")
    check_start_assignment(study, pid="RATER2")
    ensure_metric_evaluators()
    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    create_judging_run(Evaluator.objects.get(name="metric: f1"), dataset, "st", user=researcher)
    needs_human("rubric judge")  # an LLM judge's item whose answer no parser read
    System.objects.create(  # a team's own system (the release's systems are shared)
        name="team-served",
        model_name="m",
        backend="openai",
        config={"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"},
    )
    adaptive = check_create(
        AdaptiveStudy(
            name="Adaptive under fuzzing",
            half_width=1.0,
            dataset=dataset,
            mode="st",
            judge=Evaluator.objects.get(name="gpt-4-eval"),
            budget_pence=100000,
            deadline=timezone.now() + timedelta(days=1),
            draws_per_wave=10,
        ),
        list(System.objects.filter(runs__dataset=dataset, runs__mode="st").distinct()),
    )
    check_start(adaptive)
    return study


def build_other_project_objects(project: Project) -> None:
    """A few objects of another project: a system with an (imported) run, an
    evaluator, a judging run and a study of its own."""
    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    system = System.objects.create(
        name=f"{project.slug}-served", model_name="m", backend="imported", project=project
    )
    run = GenerationRun.objects.create(
        project=project, system=system, dataset=dataset, mode="st", origin="imported"
    )
    Response.objects.bulk_create(
        Response(run=run, question_id=question, text="An answer of the other team.")
        for question in dataset.question_texts.values_list("question_id", flat=True)
    )
    judge = Evaluator.objects.create(
        name=f"{project.slug} team's judge", kind="metric", config={"metric": "f1"}, project=project
    )
    create_judging_run(judge, dataset, "st", project=project)
    Study.objects.create(
        project=project, name=f"{project.slug} team's study", dataset=dataset, completion_code="X1"
    )
