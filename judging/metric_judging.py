"""An automatic metric over a judging run's responses: no model and no key,
computed in batches of 500, each batch written at once (idempotently, so a
redelivered task changes nothing), holding the run's lease. A metric whose
task score needs more than the items' values (ZeroSCROLLS' ROUGE: the three
F-measures) keeps those parts with each judgment, as JSON in its feedback.
"""

from __future__ import annotations

import json

from django.db import transaction
from django.db.models import QuerySet

from corpus.bulk import sync_rows
from corpus.models import QuestionText
from generation.models import Response
from judging import scores
from judging.evaluators import Metric, plugin_for
from judging.models import JudgingRun, Judgment
from runs import lifecycle
from runs.lifecycle import Lease, finish, holding_lease

BATCH_SIZE = 500


def run_responses(run: JudgingRun) -> QuerySet[Response]:
    """The responses a run judges: its project's, of its dataset and mode, of its
    systems (all when none)."""
    responses = Response.objects.filter(
        run__project=run.project_id, run__dataset=run.dataset, run__mode=run.mode
    )
    systems = list(run.systems.all())
    if systems:
        responses = responses.filter(run__system__in=systems)
    return responses.order_by("pk")


def run_metric_judging(run_id: int) -> JudgingRun:
    """Score every response of the run, batch by batch, holding the run's
    lease; safe to run again."""
    with holding_lease(JudgingRun, run_id) as lease:
        if lease is not None:
            _score_with_metric(JudgingRun.objects.select_related("evaluator").get(pk=run_id), lease)
    return JudgingRun.objects.get(pk=run_id)


def _score_with_metric(run: JudgingRun, lease: Lease) -> None:
    metric = plugin_for(run.evaluator)
    assert isinstance(metric, Metric), "a metric run's evaluator is a metric (judge_run checks)"
    ids = list(run_responses(run).values_list("pk", flat=True))
    task = run.dataset.task
    done = failed = 0
    problems: list[str] = []
    for start in range(0, len(ids), BATCH_SIZE):
        if lifecycle.is_cancelled(run):
            return
        batch = list(
            Response.objects.filter(pk__in=ids[start : start + BATCH_SIZE]).values_list(
                "pk", "question_id", "text"
            )
        )
        references, questions = {}, {}
        for q, text, reference, alternatives in QuestionText.objects.filter(
            dataset=run.dataset, question_id__in={q for _, q, _ in batch}
        ).values_list("question_id", "text", "reference_answer", "alternative_answers"):
            references[q] = [reference, *alternatives]
            questions[q] = text
        rows = []
        for response_id, question_id, text in batch:
            try:
                value, parts = metric.item_asked(
                    text, references[question_id], question=questions[question_id], task=task
                )
                value = metric.check_answer(value)
            except (KeyError, ValueError) as error:  # no reference, or not scorable by it
                failed += 1
                problems.append(f"response {response_id}: {error}")
                continue
            # what the task score is made of (ROUGE's three F-measures), kept with the value
            feedback = json.dumps(parts, sort_keys=True) if parts else ""
            rows.append(
                metric.judgment_fields(run.evaluator_id, response_id, value, feedback=feedback)
            )
        with transaction.atomic():
            sync_rows(
                Judgment.objects.filter(
                    evaluator_id=run.evaluator_id,
                    response_id__in=[r["response_id"] for r in rows],
                    seed__isnull=True,
                ),
                rows,
                key=scores.JUDGMENT_KEY,
                compare=("score", "raw_score", "feedback"),
            )
            done += len(rows)
            JudgingRun.objects.filter(pk=run.pk).update(done=done, failed=failed)
    finish(run, JudgingRun.Status.DONE, "\n".join(problems[:50]), lease)
